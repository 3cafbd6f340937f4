from setuptools import find_packages, setup

setup(
    name="geo-testbed",
    version="0.1.0",
    description="Mininet testbed for distributed machine learning across emulated WANs",
    license="MIT",
    packages=find_packages(include=["testbed", "testbed.*", "agents", "agents.*"]),
    # The delay line's C source: scripts/install.sh compiles it, and an installed
    # package still carries it (testbed doctor says how to build it).
    package_data={"testbed.spec.presets": ["*.csv"], "testbed.ui": ["static/*"],
                  "testbed.emulation": ["delayline.c"]},
    python_requires=">=3.9",
    install_requires=[
        "mininet==2.3.0.dev6",
        "click>=8.0",
        "pyyaml>=6.0",
        "rich>=12",
        "pyzmq>=25",
        "numpy>=1.24",
        "torch>=2.3,<3",          # checked with 2.13.0, the release scripts/install.sh takes
        "scikit-learn>=1.2",
        "matplotlib>=3.6",
        "networkx>=3.0",
        "scipy>=1.10",
        "aiohttp>=3.9",
        "pandas>=1.5",            # the Python API's tables (testbed.api, testbed export)
    ],
    extras_require={
        # Sweeps across machines (`--cluster`); checked with Ray 2.60.
        "cluster": ["ray>=2.60,<3"],
        # `testbed export --parquet` and Run.export(..., "parquet").
        "parquet": ["pyarrow>=12"],
        # `make test` installs these, the cluster and parquet extras (their tests
        # use Ray and pyarrow) and flwr (the Flower example).
        "test": ["pytest>=7", "pytest-timeout", "pytest-xdist>=3.5",
                 "hypothesis>=6", "selenium>=4.10", "jsonschema>=4.18", "check-jsonschema>=0.28",
                 "flwr>=1.42,<2"],
    },
    entry_points={"console_scripts": ["testbed=testbed.cli:main"]},
)
