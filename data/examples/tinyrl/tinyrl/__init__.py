"""tinyrl: a REINFORCE agent on a vectorized corridor, small enough to train in a fraction of a second."""
