"""The kit's glossary: for each concept, the ways of saying it that mean the same thing.

A key point's pattern that names a concept, as ``{name}`` or by one of its phrases (``square
root``), finds every other phrase of it in an answer (``sqrt``, ``root``, ``√``). Formulas are
phrases too: ``{bias_correction}`` finds "bias correction", "debias" and ``/(1 - beta^t)``.
Each line below is ``name: phrase; phrase; ...`` in the pattern language of
grader/learner/patterns.py (a phrase may use another concept, ``{name}``). Add a line, or a
phrase to a line, when a correct answer says a concept in words the glossary lacks; validate's
corpus (docs/interview_corpus/) shows whether the key points still reject the wrong answers.
"""
from __future__ import annotations

from functools import lru_cache

from backprop_traps.grader.learner.patterns import Element, _written, compile_pattern

CONCEPTS = """
sqrt: sqrt; square root; root
eps: eps; fudge term
gradient: gradient; grad; derivative; gradient signal; upstream gradient; incoming gradient; dl / d _; dl / _; delta; partial l
sum: sum; summation; total; add up; add together; added together; sum up; accumulate; accumulat; +=; tally; combine
overwrite: overwrit; assign; replace; clobber; set instead; = instead of +=; write over
forgotten: forget; forgot; forgotten; never store; never stored; never keep; never kept; never record; never recorded; never save; never saved; not store; not stored; not kept; not saved; not recorded; does not store; does not keep; did not store; did not keep; throw away; threw away; thrown away; discard; discarded
max: max; maximum; largest; biggest; highest; top
winner: winner; argmax; arg max; {max} element; {max} input; {max} position; {max} value; {max} entry; {max} location; location of {max}; position of {max}; input that won; element that won; winning input; winning element; winning position; where {max} was; where {max} came from; where {max} is; maxima; maximal element; selected element
average: average; mean; avg
batch: batch; minibatch; mini batch; examples; samples; whole batch; every example; all examples; across examples; each example
position: position; time step; step; location; offset; output position; window
bias_correction: bias correction; bias correct; debias; unbias; / ( 1 - beta ^ _ ); 1 - beta ^ _; one minus beta to the _; one minus beta raised to; one minus beta to the power; 1 - beta to the power; 1 minus beta to the _; 1 - beta to the _
weight_decay: weight decay; decay; l2; lambda; wd
learning_rate: learning rate; lr; step size
activation: activation; intermediate; hidden state; layer output; feature map; saved tensor
forward_pass: forward pass; forward; forward computation
backward_pass: backward pass; backward; backprop; backpropagation; reverse pass
recompute: recompute; recomput; rematerialise; rematerialize; rematerializ; rematerialis; regenerate; rebuild; recalculate; rerun; re run; redo; run the forward again; compute again; compute them again
checkpoint: checkpoint; gradient checkpointing; activation checkpointing
memory: memory; vram; ram; hbm; footprint
mask: mask; indicator; boolean; bool
one_bit: 1 bit; one bit; single bit; bits; packbits; packed bit; bitmask; bit mask; bit per element
finite_difference: finite difference; finite diff; central difference; central diff; numerical gradient; numeric gradient; numerical derivative; numerical estimate; gradient check; gradcheck; grad check; numerical check; numerically; numerical
one_hot: one hot; onehot; indicator of the label; true class; target; label; e_y; e_c; e_k; onehot ( y ); one hot ( y ); one_hot ( y ); delta_y; 1 [ k = y ]
softmax: softmax; probabilities; probs; predicted probabilities; sigma ( z ); softmax ( z ); s ( z )
transpose: transpose; transposed; .T
overflow: overflow; overflows; inf; infinity; nan; blow up
underflow: underflow; flush to zero; round to zero; vanish in fp16
fp32: fp32; float32; 32 bit; single precision; full precision; fp64; float64; higher precision
half: fp16; float16; bf16; bfloat16; 16 bit; half precision; low precision
master_copy: master copy; master weights; master parameters; fp32 copy; {fp32} copy; copy in {fp32}; {fp32} weights; {fp32} master
skip: skip; skipped; drop the step; discard the step; throw away the step; not apply the step; do not step; not step
shard: shard; partition; split across; spread across; distribute; zero stage; zero 1; zero 2; zero 3; fsdp; deepspeed
overlap: overlap; stride smaller than; stride less than; stride below; s < k
tie: tie; equal values; same value; duplicate max; equal maxima; several maxima; more than one max
first: first; lowest index; earliest; first occurrence
race: race; read modify write; lost update; data race; race condition
atomic: atomic; atomicadd; atomic add; atomic.add; atomically
deterministic: deterministic; reproducible; bit reproducible; same bits; bitwise identical; bit for bit
jacobian: jacobian; jacobian matrix
vjp: vjp; vector jacobian product; vector jacobian; u transpose j; v transpose j; pull back; cotangent; backward rule; backward function
jvp: jvp; jacobian vector product; jacobian vector; j v; j * v; push forward; tangent; directional derivative
reverse: reverse; reversed; backwards; last to first; from the end; from the last; back to front; end to start
topological: topological; topologically; dependency order; execution order
logsumexp: logsumexp; log sum exp; lse; log of the sum of exp; log of the summed exp; log of the sum of the exponentials; log sum _ exp; log of sum exp; logsumexp ( z )
log_softmax: log softmax; logsoftmax; log_softmax
layer: layer; depth; number of layers
running_stats: running statistics; running mean; running average; running stats; running var; running variance; moving average; ema; exponential moving average
unbiased: unbiased; n - 1; bessel; n / ( n - 1 ); divided by n - 1; divide by n - 1; ddof = 1
tied: tied; shared; same weights; same matrix; same filter; same kernel; reused; reuse; weight sharing; share
accumulate_buffer: accumulator; accumulators; accumulation buffer; gradient buffer; grad buffer; .grad
scale: scale; scaling factor; loss scale; scale factor
bias: bias; biases; bias terms; bias vectors
norm_weight: norm weight; norm; layernorm; layer norm; {batchnorm}; {gain}; normalization weight; normalisation weight; norm parameter; norm scale; gamma
exempt: exempt; exclude; excluded; no decay; not decayed; no weight decay; without decay; without weight decay; skip decay; leave out; left out; mask out; decay = false; weight_decay = 0; zero decay; no {weight_decay}; not {weight_decay}; out of {weight_decay}; {weight_decay} = 0
optimizer_state: optimizer state; optimiser state; adam state; moments; adam moments; m and v; state
global_norm: global norm; total norm; one norm; single norm; norm over all; norm of all; overall norm; joint norm; combined norm; norm over every; norm across all; norm of the concatenation; all gradients together; all parameters together
save_for_backward: save_for_backward; save for backward; save for the backward; saved for the backward; keep for the backward; kept for the backward; stash for the backward; ctx . save_for_backward
sign_lost: lose sign; lose its sign; sign is lost; sign lost; lose the sign of x; sign gone; sign is gone; throw away sign; throw away its sign; drop sign; drop its sign; destroy sign; no sign; without sign; wrong sign; | x |; abs ( x ); absolute value; x and - x; x or - x; +- sqrt; plus or minus; not determine x; not determine the input; not determine its input; can not recover x; can not recover the sign; not recover the sign; can not get the sign back; sign of x is lost; sign of x is gone; can not get x back; can not tell x from - x
double_backward: double backward; differentiate again; differentiate it again; differentiate twice; differentiate once more; differentiate the gradient; second derivative; second derivatives; higher order derivative; second order; grad of grad; gradient of the gradient; backward of the backward; backprop through the backward; differentiable again
dot_v: dot product with v; _ @ v; v @ _; dot ( _ , v ); vdot ( _ , v ); _ , v >; dot with v; dot it with v; dot the gradient with v; dotted with v; inner product with v; _ * v; _ transpose v; v transpose _; < _ , v >; ( _ * v ) . sum
knapsack: knapsack; 0 / 1 knapsack; zero one knapsack
dynamic_programming: dynamic programming; dynamic program; exact search; exhaustive search; integer program; integer linear program; ilp
per_size: per byte; per unit; per unit of memory; per megabyte; per gb; for its size; for their size; for the size; relative to size; relative to its size; relative to their size; relative to the memory; for how much memory; for the memory it take; for the memory they take; cost per byte; cost / size; cost per size; c_i / s_i
reversible: reversible; revnet; reformer; invertible; reversible block; reversible layer; reversible network; reversible architecture; additive coupling; coupling layer; reversible residual
offload: offload; cpu offload; host memory; cpu memory; cpu ram; host ram; pinned memory; zero offload
pcie: pcie; pci express; pci e; host link; host device link; cpu gpu link
independent: independent; not depend; never depend; no dependence; not grow with; never grow with; not scale with; never scale with; regardless of
variance_over_batch: sigma ^ 2 / b; sigma squared over b; sigma squared divided by b; sigma ^ 2 over b; variance over b; 1 / b; one over b; inversely with b; inversely proportional to b; inversely with the batch; inversely proportional to the batch
""".strip()


class Glossary:
    """The concepts, compiled: each concept's phrases as patterns, and each phrase's concept."""

    def __init__(self, text: str = CONCEPTS):
        self._text: dict[str, list[str]] = {}
        self.by_phrase: dict[str, str] = {}
        for line in text.splitlines():
            name, _, phrases = line.partition(":")
            if not phrases.strip():
                continue
            self._text[name.strip()] = [p.strip() for p in phrases.split(";") if p.strip()]
        for name, phrases in self._text.items():
            for phrase in phrases:
                plain = compile_pattern(phrase)
                if plain and all(e.kind in ("word", "sym") for e in plain):
                    self.by_phrase.setdefault(" ".join(_written(e) for e in plain), name)
        self._compiled: dict[str, list[tuple[Element, ...]]] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._text

    def phrases(self, name: str) -> list[tuple[Element, ...]]:
        """The concept's phrases as patterns (a phrase naming its own concept is taken literally)."""
        if name not in self._compiled:
            own = {k: v for k, v in self.by_phrase.items() if v != name}
            self._compiled[name] = [compile_pattern(p, own) for p in self._text.get(name, [])]
        return self._compiled[name]


# Questions 21 (residual_backward) and 22 (training_symptoms): their concepts, kept in a block
# of their own. BatchNorm and a gain are concepts apart from a norm's weight (which uses them),
# so that "BatchNorm in training mode" or "the gain gets a gradient" is not said by any norm.
CONCEPTS_RESIDUAL_AND_SYMPTOMS = """
batchnorm: batchnorm; batch norm; batch normalisation; batch normalization; batchnorm1d; batchnorm2d; bn
gain: gain; gains; learnable gain; scalar gain; gating scalar; residual gain
identity_path: identity path; identity term; identity connection; identity shortcut; identity branch; identity route; skip connection; skip path; shortcut; shortcut connection; residual connection; residual path; direct path; gradient highway
unchanged: unaltered; unmodified; unattenuated; undiminished; at full strength; without being multiplied; not multiplied; without attenuation; with a factor of 1; times one
vanish: die out; dies out; go to zero; goes to zero; shrink to zero; shrinks to zero; disappear; fade; fades; fade away
explode: grow without bound; grows without bound; diverge; become huge
near_identity: near the identity; near identity; close to the identity; roughly the identity; approximately the identity; almost the identity; nearly the identity; near an identity; as the identity; as an identity; as identity; identity map; identity mapping; identity function; exactly the identity; identity at init; identity at initialisation; identity at initialization
zero_init: zero init; zero initialise; zero initialize; zero initialisation; zero initialization; zero initialised; zero initialized; initialised to zero; initialized to zero; initialise to zero; initialize to zero; initialised at zero; initialized at zero; init to zero; init at zero; start at zero; starts at zero; set to zero
rezero: rezero; layerscale; layer scale; skipinit; fixup
he_init: he init; he initialisation; he initialization; he normal; he uniform; he et al; he scale; kaiming; kaiming init; kaiming initialisation; kaiming initialization; kaiming normal; kaiming_normal_; kaiming_uniform_; msra
xavier: xavier; glorot; xavier_normal_; xavier_uniform_; 2 / ( fan_in + fan_out ); 1 / fan_avg
two_over_fan: 2 / fan; 2 / fan_in; 2 / fan_out; 2 / n; 2 / n_in; 2 / n_out; 2 / d_in; 2 / d_out; 2 over fan; 2 over fan_in; 2 over fan_out; 2 over the fan; 2 over n; two over fan; two over fan_in; two over fan_out; two over the fan; two over n; 2 / ( fan_in ); 2 / ( fan_out ); 2 * 1 / fan
loss_landscape: loss landscape; loss surface; landscape; optimisation landscape; optimization landscape; error surface; loss geometry
ln_c: ln c; log c; ln ( num_classes ); log ( num_classes ); ln ( n_classes ); log ( n_classes ); ln num_classes; log num_classes; ln ( c ); log ( c ); log of c; ln of c; log of the number of classes; ln of the number of classes; log of number of classes; natural log of the number of classes; log the number of classes; log ( 1 / c ); ln 10; ln ( 10 ); log 10; log ( 10 )
repeated_batch: same batch; same {batch}; one batch repeated; repeated batch; batch repeated; repeats one batch; repeats the batch; repeat one batch; repeat the batch; the one batch; a single batch; single batch; identical batches; identical batch; same minibatch; same data
train_mode: training mode; train mode; model.train; left in training; still in training; in training mode
validation: validation; val; validation loss; val loss; validation set; held out; dev set; model.eval
""".strip()


@lru_cache(maxsize=1)
def glossary() -> Glossary:
    return Glossary(CONCEPTS + "\n" + CONCEPTS_RESIDUAL_AND_SYMPTOMS)
