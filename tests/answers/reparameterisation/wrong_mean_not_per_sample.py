# expect: wrong
# Both estimators return the estimate (the mean over samples), not one value per sample.
def pathwise_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps
    return f_prime(z, coef).mean(), (f_prime(z, coef) * eps).mean()


def score_function_grad(mu, sigma, eps, coef):
    fz = f(mu + sigma * eps, coef)
    return (fz * eps / sigma).mean(), (fz * (eps ** 2 - 1.0) / sigma).mean()


def variance_ratio(mu, sigma, eps, coef):
    z = mu + sigma * eps
    fz, g = f(z, coef), f_prime(z, coef)
    return np.array([np.var(fz * eps / sigma) / np.var(g),
                     np.var(fz * (eps ** 2 - 1.0) / sigma) / np.var(g * eps)])
