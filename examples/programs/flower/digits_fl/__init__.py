"""FedAvg on scikit-learn's digits with a NumPy MLP: a Flower app."""
