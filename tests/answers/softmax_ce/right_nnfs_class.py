# question: softmax_ce
# expect: full
# nnfs style ("Neural Networks from Scratch"): a combined softmax + categorical cross-entropy
# object with forward and backward, its dinputs the gradient; the Jacobian as in the book.
import numpy as np


class Activation_Softmax:
    def forward(self, inputs):
        exp_values = np.exp(inputs - np.max(inputs, axis=1, keepdims=True))
        self.output = exp_values / np.sum(exp_values, axis=1, keepdims=True)


class Activation_Softmax_Loss_CategoricalCrossentropy:
    def __init__(self):
        self.activation = Activation_Softmax()

    def forward(self, inputs, y_true):
        self.activation.forward(inputs)
        self.output = self.activation.output
        shifted = inputs - np.max(inputs, axis=1, keepdims=True)
        log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
        return np.mean(-log_probs[range(len(inputs)), y_true])

    def backward(self, dvalues, y_true):
        samples = len(dvalues)
        self.dinputs = dvalues.copy()
        self.dinputs[range(samples), y_true] -= 1
        self.dinputs = self.dinputs / samples


def softmax_cross_entropy(logits, labels):
    loss_activation = Activation_Softmax_Loss_CategoricalCrossentropy()
    loss = loss_activation.forward(logits, labels)
    loss_activation.backward(loss_activation.output, labels)
    return float(loss), loss_activation.dinputs


def softmax_jacobian(z):
    softmax = Activation_Softmax()
    softmax.forward(z[None, :])
    single_output = softmax.output[0].reshape(-1, 1)
    return np.diagflat(single_output) - np.dot(single_output, single_output.T)
