"""The reference pages under docs/, drawn from the code's declarations
(`python -m testbed.docs`): pages.py lists them."""
