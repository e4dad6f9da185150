"""Ray Tune's quick start, under tune: a function that returns its score, a grid and a
choice, Tuner.fit() and the best configuration. Only the import line differs from Ray's
(`from ray import tune` becomes `import tune`); like Ray's, the run is not under
`if __name__ == "__main__":` (a trial loads the script only up to tune's call)."""

import tune


def objective(config):
    # a bowl whose floor is at a = 0: the smaller a and b, the smaller the score
    score = config["a"] ** 2 + config["b"]
    return {"score": score}


search_space = {
    "a": tune.grid_search([0.001, 0.01, 0.1, 1.0]),
    "b": tune.choice([1, 2, 3]),
}
tuner = tune.Tuner(objective, param_space=search_space)
results = tuner.fit()
print("Best config found:", results.get_best_result(metric="score", mode="min").config)
