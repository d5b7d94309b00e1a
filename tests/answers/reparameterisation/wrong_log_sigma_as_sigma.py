# log_sigma passed on as if it were sigma: z = mu + log_sigma * eps. Wrong, and not the
# missing chain-rule factor (its dlog_sigma is not f'(z) * eps of the true z).
# expect: wrong
# not named: log-sigma-chain-missing sigma-grad-from-z
def pathwise_grad_log_sigma(mu, log_sigma, eps, coef):
    return pathwise_grad(mu, log_sigma, eps, coef)
