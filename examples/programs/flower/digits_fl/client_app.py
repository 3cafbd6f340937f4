"""The ClientApp: trains the global model on this SuperNode's partition
(node config `partition-id`, `num-partitions`) and evaluates it there."""

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from digits_fl import task

app = ClientApp()


def _data(context):
    return task.partition(int(context.node_config["partition-id"]),
                          int(context.node_config["num-partitions"]))


@app.train()
def train(msg: Message, context: Context):
    x, y = _data(context)
    cfg = context.run_config
    weights = msg.content["arrays"].to_numpy_ndarrays()
    server_round = int(msg.content["config"]["server-round"])
    weights, loss = task.train(weights, x, y, int(cfg["local-epochs"]), int(cfg["batch-size"]),
                               float(cfg["learning-rate"]), seed=server_round)
    task.append_metrics({"round": server_round, "train_loss": loss, "examples": len(y)})
    content = RecordDict({"arrays": ArrayRecord(weights),
                          "metrics": MetricRecord({"train_loss": loss, "num-examples": len(y)})})
    return Message(content=content, reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context):
    x, y = _data(context)
    loss, accuracy = task.evaluate(msg.content["arrays"].to_numpy_ndarrays(), x, y)
    metrics = MetricRecord({"eval_loss": loss, "eval_accuracy": accuracy, "num-examples": len(y)})
    return Message(content=RecordDict({"metrics": metrics}), reply_to=msg)
