"""Many runs: a recipe's sweep over settings, resumable; a figure
reproduced from its recipe; the settings spread over a Ray cluster."""
