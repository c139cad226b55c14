"""The built-in workloads' models as torch modules (needs the `torch` extra).

Written here from the published architectures, with the parameter names, shapes and order of
the reference implementations, so `state_dict()` keys and `parameters()` order (which DDP's
bucketing follows) are theirs:

- `resnet50()`: ResNet-50 v1.5 as torchvision's `resnet50()` lays it out (bottleneck blocks
  [3, 4, 6, 3], stride on the 3x3 convolution, a 1x1 convolution + batch norm `downsample` on
  each stage's first block); 25,557,032 parameters in 161 tensors. torchvision itself is not
  used: its 0.28.0 wheel on this project's index is a CUDA build whose `_C.so` needs
  libtorch_cuda, so `import torchvision` fails with the CPU torch (checked: this layout's
  state_dict keys and shapes equal those of the resnet50() in that wheel's source).
- `bert_base()`: BERT-base (`BertModel`: 12 layers, hidden 768, 12 heads, FFN 3072, vocabulary
  30522, 512 positions, 2 token types, a pooler); 109,482,240 parameters in 199 tensors, named as
  Hugging Face's `BertModel` names them (`encoder.layer.0.attention.self.query.weight`, ...).
- `gpt2_small()`: GPT-2 small (12 layers, hidden 768, 12 heads, vocabulary 50257, 1024
  positions, the LM head tied to the token embedding); 124,439,808 parameters in 148 tensors,
  with the reference's `Conv1D` shapes (weight `(in, out)`).

Each model has `example_batch(model_name, batch)` inputs and `loss(model_name, model, inputs)`
for timing one training iteration (inaemu/workload/models.py measures with them).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# ----------------------------------------------------------------------------------- ResNet-50


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None):
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class ResNet(nn.Module):
    def __init__(self, layers: tuple[int, ...] = (3, 4, 6, 3), num_classes: int = 1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._stage(64, layers[0], 1)
        self.layer2 = self._stage(128, layers[1], 2)
        self.layer3 = self._stage(256, layers[2], 2)
        self.layer4 = self._stage(512, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def _stage(self, planes: int, blocks: int, stride: int) -> nn.Sequential:
        out = planes * Bottleneck.expansion
        downsample = None
        if stride != 1 or self.inplanes != out:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, out, 1, stride=stride, bias=False),
                                       nn.BatchNorm2d(out))
        stage = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = out
        stage += [Bottleneck(out, planes) for _ in range(1, blocks)]
        return nn.Sequential(*stage)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet50() -> ResNet:
    return ResNet((3, 4, 6, 3))


# ----------------------------------------------------------------------------------- BERT-base


class BertEmbeddings(nn.Module):
    def __init__(self, vocab: int, hidden: int, positions: int, token_types: int, p: float):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(positions, hidden)
        self.token_type_embeddings = nn.Embedding(token_types, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(p)

    def forward(self, ids: torch.Tensor, token_types: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = (self.word_embeddings(ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_types))
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, p: float):
        super().__init__()
        self.heads, self.p = heads, p
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, self.heads, h // self.heads).transpose(1, 2)

        out = F.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)),
                                             split(self.value(x)),
                                             dropout_p=self.p if self.training else 0.0)
        return out.transpose(1, 2).reshape(b, s, h)


class BertSelfOutput(nn.Module):
    def __init__(self, hidden: int, p: float):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(p)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, p: float):
        super().__init__()
        self.self = BertSelfAttention(hidden, heads, p)
        self.output = BertSelfOutput(hidden, p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(self.self(x), x)


class BertIntermediate(nn.Module):
    def __init__(self, hidden: int, ffn: int):
        super().__init__()
        self.dense = nn.Linear(hidden, ffn)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(x))


class BertOutput(nn.Module):
    def __init__(self, hidden: int, ffn: int, p: float):
        super().__init__()
        self.dense = nn.Linear(ffn, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(p)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, p: float):
        super().__init__()
        self.attention = BertAttention(hidden, heads, p)
        self.intermediate = BertIntermediate(hidden, ffn)
        self.output = BertOutput(hidden, ffn, p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.attention(x)
        return self.output(self.intermediate(x), x)


class BertEncoder(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, ffn: int, p: float):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(hidden, heads, ffn, p) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layer:
            x = layer(x)
        return x


class BertPooler(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(x[:, 0]))


class Bert(nn.Module):
    def __init__(self, layers: int = 12, hidden: int = 768, heads: int = 12, ffn: int = 3072,
                 vocab: int = 30522, positions: int = 512, token_types: int = 2,
                 p: float = 0.1):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab, hidden, positions, token_types, p)
        self.encoder = BertEncoder(layers, hidden, heads, ffn, p)
        self.pooler = BertPooler(hidden)
        for m in self.modules():                 # the reference's initializer_range 0.02
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, ids: torch.Tensor, token_types: torch.Tensor) -> tuple[torch.Tensor,
                                                                              torch.Tensor]:
        x = self.encoder(self.embeddings(ids, token_types))
        return x, self.pooler(x)


def bert_base() -> Bert:
    return Bert()


# ----------------------------------------------------------------------------------- GPT-2 small


class Conv1D(nn.Module):
    """A linear layer whose weight is stored `(in, out)`, as GPT-2's reference stores it."""

    def __init__(self, inputs: int, outputs: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(inputs, outputs))
        self.bias = nn.Parameter(torch.zeros(outputs))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(
            *x.shape[:-1], -1)


class GPT2Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, p: float):
        super().__init__()
        self.heads, self.p = heads, p
        self.c_attn = Conv1D(hidden, 3 * hidden)
        self.c_proj = Conv1D(hidden, hidden)
        self.resid_dropout = nn.Dropout(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2)
                   for t in self.c_attn(x).split(h, dim=2))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                             dropout_p=self.p if self.training else 0.0)
        return self.resid_dropout(self.c_proj(out.transpose(1, 2).reshape(b, s, h)))


class GPT2MLP(nn.Module):
    def __init__(self, hidden: int, p: float):
        super().__init__()
        self.c_fc = Conv1D(hidden, 4 * hidden)
        self.c_proj = Conv1D(4 * hidden, hidden)
        self.dropout = nn.Dropout(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class GPT2Block(nn.Module):
    def __init__(self, hidden: int, heads: int, p: float):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.attn = GPT2Attention(hidden, heads, p)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-5)
        self.mlp = GPT2MLP(hidden, p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, layers: int = 12, hidden: int = 768, heads: int = 12,
                 vocab: int = 50257, positions: int = 1024, p: float = 0.1):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.drop = nn.Dropout(p)
        self.h = nn.ModuleList(GPT2Block(hidden, heads, p) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """The LM logits (head tied to `wte`, so it adds no parameters)."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.drop(self.wte(ids) + self.wpe(positions))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


def gpt2_small() -> GPT2:
    return GPT2()


# ----------------------------------------------------------------------------------- registry

BUILDERS = {"resnet50": resnet50, "bert-base": bert_base, "gpt2": gpt2_small}


def build(name: str, device: str | torch.device = "cpu") -> nn.Module:
    """The model, its tensors on `device` (`"meta"`: shapes only, nothing allocated)."""
    with torch.device(device):
        return BUILDERS[name]()


def example_batch(name: str, batch: int, seq: int = 128, generator: torch.Generator | None = None
                  ) -> tuple[torch.Tensor, ...]:
    """Random inputs of one training step: images 3x224x224 and labels of 1000 classes for
    ResNet-50; `seq` tokens per sample for BERT-base and GPT-2."""
    g = generator or torch.Generator().manual_seed(0)
    if name == "resnet50":
        return (torch.randn(batch, 3, 224, 224, generator=g),
                torch.randint(0, 1000, (batch,), generator=g))
    if name == "bert-base":
        return (torch.randint(0, 30522, (batch, seq), generator=g),
                torch.zeros(batch, seq, dtype=torch.long))
    return (torch.randint(0, 50257, (batch, seq), generator=g),)


def loss(name: str, model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """One step's loss: cross entropy on the labels (ResNet-50), next-token cross entropy (GPT-2);
    BERT-base has no head of its own here, so a sequence-level regression on the pooled output
    (through the pooler, so every parameter gets a gradient)."""
    if name == "resnet50":
        images, labels = inputs
        return F.cross_entropy(model(images), labels)
    if name == "bert-base":
        ids, token_types = inputs
        _, pooled = model(ids, token_types)
        return pooled.float().pow(2).mean()
    (ids,) = inputs
    logits = model(ids)
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def make_optimizer(name: str, model: nn.Module) -> torch.optim.Optimizer:
    """What each is usually trained with: SGD with momentum (ResNet-50), AdamW (the
    transformers)."""
    if name == "resnet50":
        return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    return torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)


def count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())

