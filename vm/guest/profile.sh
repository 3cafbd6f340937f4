# The testbed's virtualenv, as scripts/install.sh made it in the image.
PATH=/opt/geo-testbed-venv/bin:$PATH
