# expect: trap=sample-as-constant
# The pathwise estimator keeps z's dependence on mu but drops its dependence on sigma ("sigma
# only scales the noise"): dsigma is 0 on every sample.
def pathwise_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps
    return f_prime(z, coef), np.zeros_like(z)
