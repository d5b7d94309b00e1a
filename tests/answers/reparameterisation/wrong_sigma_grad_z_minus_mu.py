# expect: trap=sigma-grad-from-z
# The pathwise dsigma uses z - mu (that is sigma * eps) for dz/dsigma: sigma times too large.
def pathwise_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps
    return f_prime(z, coef), f_prime(z, coef) * (z - mu)
