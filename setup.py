from setuptools import find_packages, setup

setup(
    name="geo-testbed",
    version="0.1.0",
    description="Mininet testbed for distributed machine learning across emulated WANs",
    packages=find_packages(include=["testbed", "testbed.*", "agents", "agents.*"]),
    package_data={"testbed.spec.presets": ["*.csv"], "testbed.ui": ["static/*"]},
    python_requires=">=3.9",
    install_requires=[
        "mininet==2.3.0.dev6",
        "click>=8.0",
        "pyyaml>=6.0",
        "rich>=12",
        "pyzmq>=25",
        "numpy>=1.24",
        "torch==2.13.0",
        "scikit-learn>=1.2",
        "matplotlib>=3.6",
        "networkx>=3.0",
        "scipy>=1.10",
        "aiohttp>=3.9",
    ],
    extras_require={
        # Sweeps across machines (`--cluster`); checked with Ray 2.60.
        "cluster": ["ray>=2.60,<3"],
        "test": ["pytest>=7", "pytest-timeout", "pytest-rerunfailures>=14", "hypothesis>=6", "scipy>=1.10",
                 "ray>=2.60,<3", "selenium>=4.10", "flwr>=1.42,<2"],
    },
    entry_points={"console_scripts": ["testbed=testbed.cli:main"]},
)
