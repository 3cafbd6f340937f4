"""Per-layer parameter shapes of published architectures, so a synthetic
workload moves exactly as many bytes as the real model would."""

import numpy as np


def _bn(prefix, c):
    return [(f"{prefix}.weight", (c,)), (f"{prefix}.bias", (c,))]


def resnet_shapes(blocks, bottleneck, classes=1000):
    shapes = [("conv1.weight", (64, 3, 7, 7))] + _bn("bn1", 64)
    cin = 64
    expansion = 4 if bottleneck else 1
    for layer, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512)), start=1):
        for b in range(n):
            p = f"layer{layer}.{b}"
            cout = width * expansion
            if bottleneck:
                shapes += [(f"{p}.conv1.weight", (width, cin, 1, 1))] + _bn(f"{p}.bn1", width)
                shapes += [(f"{p}.conv2.weight", (width, width, 3, 3))] + _bn(f"{p}.bn2", width)
                shapes += [(f"{p}.conv3.weight", (cout, width, 1, 1))] + _bn(f"{p}.bn3", cout)
            else:
                shapes += [(f"{p}.conv1.weight", (width, cin, 3, 3))] + _bn(f"{p}.bn1", width)
                shapes += [(f"{p}.conv2.weight", (width, width, 3, 3))] + _bn(f"{p}.bn2", width)
            if b == 0 and (layer > 1 or cin != cout):
                shapes += [(f"{p}.downsample.0.weight", (cout, cin, 1, 1))] + _bn(f"{p}.downsample.1", cout)
            cin = cout
    return shapes + [("fc.weight", (classes, cin)), ("fc.bias", (classes,))]


def vgg16_shapes(classes=1000):
    shapes, cin, i = [], 3, 0
    for c in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if c == "M":
            i += 1
            continue
        shapes += [(f"features.{i}.weight", (c, cin, 3, 3)), (f"features.{i}.bias", (c,))]
        cin, i = c, i + 2
    for j, (a, b) in zip((0, 3, 6), ((512 * 7 * 7, 4096), (4096, 4096), (4096, classes))):
        shapes += [(f"classifier.{j}.weight", (b, a)), (f"classifier.{j}.bias", (b,))]
    return shapes


def bert_base_shapes(vocab=30522, hidden=768, layers=12, inter=3072, positions=512):
    s = [("embeddings.word", (vocab, hidden)), ("embeddings.position", (positions, hidden)),
         ("embeddings.token_type", (2, hidden)), ("embeddings.ln.weight", (hidden,)),
         ("embeddings.ln.bias", (hidden,))]
    for i in range(layers):
        p = f"encoder.{i}"
        for m in ("query", "key", "value", "attn_out"):
            s += [(f"{p}.{m}.weight", (hidden, hidden)), (f"{p}.{m}.bias", (hidden,))]
        s += [(f"{p}.attn_ln.weight", (hidden,)), (f"{p}.attn_ln.bias", (hidden,)),
              (f"{p}.inter.weight", (inter, hidden)), (f"{p}.inter.bias", (inter,)),
              (f"{p}.out.weight", (hidden, inter)), (f"{p}.out.bias", (hidden,)),
              (f"{p}.out_ln.weight", (hidden,)), (f"{p}.out_ln.bias", (hidden,))]
    return s + [("pooler.weight", (hidden, hidden)), ("pooler.bias", (hidden,))]


def alexnet_shapes(classes=1000):
    """torchvision's AlexNet (Krizhevsky et al. 2012, one tower)."""
    shapes, cin = [], 3
    for i, (c, k) in zip((0, 3, 6, 8, 10), ((64, 11), (192, 5), (384, 3), (256, 3), (256, 3))):
        shapes += [(f"features.{i}.weight", (c, cin, k, k)), (f"features.{i}.bias", (c,))]
        cin = c
    for j, (a, b) in zip((1, 4, 6), ((256 * 6 * 6, 4096), (4096, 4096), (4096, classes))):
        shapes += [(f"classifier.{j}.weight", (b, a)), (f"classifier.{j}.bias", (b,))]
    return shapes


def mobilenet_shapes(classes=1000):
    """MobileNet v1 at width 1.0 (Howard et al. 2017): a 3x3 convolution,
    13 depthwise-separable blocks, each convolution followed by BatchNorm,
    and the classifier."""
    shapes = [("conv.weight", (32, 3, 3, 3))] + _bn("conv.bn", 32)
    cin = 32
    for i, cout in enumerate((64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024)):
        shapes += [(f"block{i}.dw.weight", (cin, 1, 3, 3))] + _bn(f"block{i}.dw.bn", cin)
        shapes += [(f"block{i}.pw.weight", (cout, cin, 1, 1))] + _bn(f"block{i}.pw.bn", cout)
        cin = cout
    return shapes + [("fc.weight", (classes, cin)), ("fc.bias", (classes,))]


def count(shapes):
    return sum(int(np.prod(s)) for _, s in shapes)
