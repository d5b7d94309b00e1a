# expect: wrong
# The variance ratio upside down: pathwise over score function.
def variance_ratio(mu, sigma, eps, coef):
    path, score = pathwise_grad(mu, sigma, eps, coef), score_function_grad(mu, sigma, eps, coef)
    return np.array([np.var(path[0]) / np.var(score[0]), np.var(path[1]) / np.var(score[1])])
