# question: mlp_backprop
# expect: full
# nnfs style: Layer_Dense and Activation_ReLU objects with forward(inputs) and
# backward(dvalues), each storing dinputs / dweights / dbiases.
import numpy as np


class Layer_Dense:
    def __init__(self, weights, biases):
        self.weights, self.biases = weights, biases

    def forward(self, inputs):
        self.inputs = inputs
        self.output = np.dot(inputs, self.weights) + self.biases

    def backward(self, dvalues):
        self.dweights = np.dot(self.inputs.T, dvalues)
        self.dbiases = np.sum(dvalues, axis=0, keepdims=True)
        self.dinputs = np.dot(dvalues, self.weights.T)


class Activation_ReLU:
    def forward(self, inputs):
        self.inputs = inputs
        self.output = np.maximum(0, inputs)

    def backward(self, dvalues):
        self.dinputs = dvalues.copy()
        self.dinputs[self.inputs <= 0] = 0


def mse_loss(out, y):
    samples = len(out)
    loss = 0.5 * np.sum((out - y) ** 2) / samples
    return float(loss), (out - y) / samples


def mlp_forward(x, W1, b1, W2, b2):
    dense1, relu, dense2 = Layer_Dense(W1, b1), Activation_ReLU(), Layer_Dense(W2, b2)
    dense1.forward(x)
    relu.forward(dense1.output)
    dense2.forward(relu.output)
    return dense2.output, relu.output, dense1.output


def mlp_backward(dout, x, z, h, W1, W2):
    dense1, relu, dense2 = Layer_Dense(W1, None), Activation_ReLU(), Layer_Dense(W2, None)
    dense1.inputs, relu.inputs, dense2.inputs = x, z, h
    dense2.backward(dout)
    relu.backward(dense2.dinputs)
    dense1.backward(relu.dinputs)
    return (dense1.dinputs, dense1.dweights, dense1.dbiases[0],
            dense2.dweights, dense2.dbiases[0])
