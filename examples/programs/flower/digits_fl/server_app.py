"""The ServerApp: FedAvg over `min-nodes` SuperNodes for `num-server-rounds`
rounds.  Each round's metrics are appended to $TESTBED_METRICS (where set)
as they are known: the nodes' evaluation, weighted by their examples, and
the global model's on the held-out test split."""

from flwr.app import ArrayRecord, Context, MetricRecord
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from digits_fl import task

app = ServerApp()


class RecordedFedAvg(FedAvg):
    """FedAvg that also records each round's aggregated node evaluation."""

    def aggregate_evaluate(self, server_round, replies):
        metrics = super().aggregate_evaluate(server_round, replies)
        if metrics is not None:
            task.append_metrics({"round": server_round, **{f"nodes_{k}": v for k, v in metrics.items()}})
        return metrics


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    nodes = int(cfg["min-nodes"])
    arrays = ArrayRecord(task.initial_weights(int(cfg["hidden"])))
    task.append_metrics({"model_bytes": arrays.count_bytes()})
    _, _, x_test, y_test = task.digits()

    def evaluate(server_round, arrays):
        loss, accuracy = task.evaluate(arrays.to_numpy_ndarrays(), x_test, y_test)
        task.append_metrics({"round": server_round, "test_loss": loss, "test_accuracy": accuracy})
        return MetricRecord({"test_loss": loss, "test_accuracy": accuracy})

    strategy = RecordedFedAvg(min_train_nodes=nodes, min_evaluate_nodes=nodes, min_available_nodes=nodes)
    strategy.start(grid=grid, initial_arrays=arrays, num_rounds=int(cfg["num-server-rounds"]),
                   evaluate_fn=evaluate)
