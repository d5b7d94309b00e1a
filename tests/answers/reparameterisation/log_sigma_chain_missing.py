# Trap log-sigma-chain-missing: the gradient with respect to log sigma taken as the one with
# respect to sigma (the chain rule's dsigma/dlog_sigma = sigma forgotten).
# expect: trap=log-sigma-chain-missing
def pathwise_grad_log_sigma(mu, log_sigma, eps, coef):
    z = mu + np.exp(log_sigma) * eps
    return f_prime(z, coef), f_prime(z, coef) * eps
