"""Build, run and analyse experiments from Python, without writing YAML.

    import testbed
    exp = testbed.Experiment.from_file("topologies/quickstart.yaml")
    exp = exp.with_(experiment={"lr": 0.05, "stop": {"iterations": 50}})
    run = exp.run()                          # as `testbed run`, as root
    run.summary["final_accuracy"], run.iterations().groupby("agent").sync.mean()

An Experiment is a topo.yaml document, validated when it is made: a
mistake raises `testbed.SpecError`, whose text names the YAML path, as the
command line prints it.  A Run is a run folder; `testbed.load_run(path)`
opens any, made from Python or not.
"""

import os

import yaml

from testbed.analysis import frames
from testbed.spec import SpecError, from_document, parse_text
from testbed.spec.overrides import merge

__all__ = ["Experiment", "Run", "load_run", "SpecError"]


class Experiment:
    """A validated topology with its experiment.  `base_dir` is where the
    plug-ins and traces it names by a relative path are."""

    def __init__(self, document, base_dir=None, name="experiment"):
        self.document = document
        self.base_dir = os.path.abspath(base_dir or os.getcwd())
        self.name = name
        self.spec = from_document(document, source=self.source, default_name=name)

    @property
    def source(self):
        """The file this experiment stands for (it need not exist)."""
        return os.path.join(self.base_dir, f"{self.name}.yaml")

    @classmethod
    def from_file(cls, path):
        with open(path) as f:
            doc = parse_text(f.read())
        name = os.path.splitext(os.path.basename(path))[0]
        return cls(doc, os.path.dirname(os.path.abspath(path)), name)

    @classmethod
    def from_dict(cls, document, base_dir=None, name="experiment"):
        return cls(document, base_dir, name)

    def with_(self, **sections):
        """A new Experiment with `sections` merged in (mappings key by key,
        other values replaced), validated: `with_(experiment={"lr": 0.05})`."""
        return Experiment(merge(self.document, sections), self.base_dir, self.name)

    def to_yaml(self):
        return yaml.safe_dump(self.document, sort_keys=False)

    def run(self, runs_root="results/runs", delay_backend="auto", quiet=True):
        """Run it as `testbed run` does (needs root); the Run, whatever its end."""
        from testbed.emulation import capability
        from testbed.run import runner

        capability.require_network_capabilities()
        say = (lambda line: None) if quiet else print
        outcome = runner.run(self.spec, runs_root, delay_backend, show=say, say=say,
                             source_text=self.to_yaml())
        return Run(outcome.folder.path)


class Run:
    """A run folder: its status and summary, and its records as DataFrames
    (`tables`: iterations, evaluations, links, link_changes, probes, cpu,
    decisions, metrics)."""

    tables = frames.TABLES

    def __init__(self, path):
        if not os.path.isfile(os.path.join(path, "spec.json")):
            raise FileNotFoundError(f"{path} is not a run folder (it has no spec.json)")
        self.path = os.path.abspath(path)
        self._frames = frames.Frames(self.path)

    @property
    def status(self):
        return self._frames.folder.read_json("status.json", {}).get("status")

    @property
    def summary(self):
        """summary.json, written by the report at the run's end."""
        return self._frames.folder.read_json("summary.json", {})

    def __getattr__(self, name):
        if name in frames.TABLES:
            return getattr(self._frames, name)
        raise AttributeError(name)

    def export(self, out_dir, fmt="parquet"):
        """Every table into `out_dir` as TABLE.parquet (or .csv); the paths."""
        os.makedirs(out_dir, exist_ok=True)
        paths = []
        for name in self.tables:
            table = self._frames.table(name)
            path = os.path.join(out_dir, f"{name}.{fmt}")
            if fmt == "parquet":
                table.to_parquet(path, index=False)
            else:
                table.to_csv(path, index=False)
            paths.append(path)
        return paths


def load_run(path):
    return Run(path)
