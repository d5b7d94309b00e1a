# hostile: refuses every later import and plants a fake numpy whose comparisons always
# say "equal", then answers the backward wrongly
# base: solution
# expect: at-most 6
# says: does not match
import sys
import types


class _Refuse:
    def find_spec(self, name, path=None, target=None):
        raise ImportError(f"import of {name} refused")


_fake = types.ModuleType("numpy")
_fake.allclose = lambda *a, **k: True
_fake.array_equal = lambda *a, **k: True
sys.modules["numpy"] = _fake
sys.meta_path.insert(0, _Refuse())


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    return np.zeros(input_shape)
