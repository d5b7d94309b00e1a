# expect: trap=sigma-grad-from-z
# Only the score function is wrong: (z**2 - 1) / sigma where (eps**2 - 1) / sigma belongs.
def score_function_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps
    fz = f(z, coef)
    return fz * eps / sigma, fz * (z ** 2 - 1.0) / sigma
