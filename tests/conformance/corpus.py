#!/usr/bin/python3
"""The conformance corpus: models nobody here wrote, trained on "cuda" the
way training scripts do, and PyTorch's own account of each run.

Usage: corpus.py MODEL [--steps N] [--history FILE] [--modlog FILE]
       corpus.py --list

MODEL is one of MODELS below: torchvision's and torchaudio's own models,
built with weights=None and small inputs. Made for the CUDA stand-in
(scripts/cuda-standin.sh): the caching allocator is PyTorch's, no kernel
runs. The model, its optimizer and its batches are made on the CPU first;
then (mt_sync.start: READY, wait for MT_GO) everything on the device: the
model moved there, N training steps (default 2): batch to the device,
forward (under autocast or activation checkpointing where MODELS says),
loss, zero_grad, backward, optimizer step. Between the first step and the
others it says "MID <pid>" and waits for $MT_GO2 when that is set (an
attach in the middle of the run); there it resets the peaks, after
printing the figures of that moment:

    mid dev=cuda:0 allocated= reserved= allocated_peak= reserved_peak=
        allocs= alloc_bytes= frees= free_bytes=

At the end it prints, as tests/fixtures/cuda_model.py does (its report()),
"torch dev=cuda:0 ..." (memory_stats(), the peaks those of the whole run),
the snapshot's "segment" and "block" lines, then

    since dev=cuda:0 allocated_peak= reserved_peak=   peaks since MID
    grad <module> <bytes> <ptr>
                              a weight of a module called in a step, the
                              address of its last step's gradient
    modules <name> ...        the modules called in a step
    done <model>

  --history F  _record_memory_history from READY; its _snapshot() to F
  --modlog F   the records of --module-log, written by hooks in the
               process (cuda_model.py's ModLog); in-place activations are
               made out-of-place first (full backward hooks refuse them)

MT_CORPUS_NO_CUDNN=1 turns cuDNN off (torch.backends.cudnn.enabled): for
development only while the stand-in's cuDNN refuses convolutions.
"""

import argparse
import os
import sys

import torch
import torch.utils.checkpoint
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mt_sync  # noqa: E402

# name: (builder, input maker, options)
# options: amp (autocast bf16), ckpt (torch.utils.checkpoint of stages),
# inplace (its forward modifies a module's output in place: no --modlog)


def vision(shape, classes=10):
    def make(n):
        return (torch.randn(n, *shape),
                torch.randint(0, classes, (n,)))
    return make


def tv(name, **kw):
    def build():
        import torchvision.models as m
        return getattr(m, name)(weights=None, **kw)
    return build


def vit():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=32, patch_size=8, num_layers=4,
                             num_heads=4, hidden_dim=128, mlp_dim=512,
                             num_classes=10)


def swin():
    import torchvision.models as m
    return m.swin_t(weights=None, num_classes=10)


def deeplab():
    import torchvision.models.segmentation as s
    return s.deeplabv3_mobilenet_v3_large(weights=None,
                                          weights_backbone=None,
                                          num_classes=5, aux_loss=False)


def segmentation(n):
    return (torch.randn(n, 3, 64, 64), torch.randint(0, 5, (n, 64, 64)))


def wav2vec2():
    import torchaudio.models as a
    return a.wav2vec2_model(
        extractor_mode="group_norm",
        extractor_conv_layer_config=[(64, 10, 5), (64, 3, 2), (64, 2, 2)],
        extractor_conv_bias=False, encoder_embed_dim=96,
        encoder_projection_dropout=0.1, encoder_pos_conv_kernel=16,
        encoder_pos_conv_groups=4, encoder_num_layers=2,
        encoder_num_heads=4, encoder_attention_dropout=0.1,
        encoder_ff_interm_features=256, encoder_ff_interm_dropout=0.0,
        encoder_dropout=0.1, encoder_layer_norm_first=False,
        encoder_layer_drop=0.0, aux_num_out=32)


def audio(n):
    # 0.5 s of 16 kHz audio, CTC-like targets read as frame classes
    return torch.randn(n, 8000), torch.randint(0, 32, (n,))


def conformer():
    import torchaudio.models as a
    return a.Conformer(input_dim=80, num_heads=4, ffn_dim=256, num_layers=2,
                       depthwise_conv_kernel_size=15)


def features(n):
    return torch.randn(n, 100, 80), torch.randn(n, 100, 80)


def wavernn():
    # torchaudio's recurrent vocoder: an upsampling ResNet (Conv1d,
    # BatchNorm1d, Conv2d) then nn.GRU. Its LSTM models (Tacotron2, the
    # Emformer RNN-T) make their masks from torch.max(lengths).item() on
    # the device, which the stand-in's no-op kernels leave as garbage
    import torchaudio.models as a
    return a.WaveRNN(upsample_scales=[4, 4], n_classes=64, hop_length=16,
                     n_res_block=2, n_rnn=128, n_fc=128, kernel_size=5,
                     n_freq=40, n_hidden=64, n_output=64)


def wavernn_in(n):
    # 12 frames of 40 mel bins, their (12 - 5 + 1) * 16 samples
    return (torch.randn(n, 1, 128), torch.randn(n, 1, 40, 12))


MODELS = {
    "resnet18": (tv("resnet18", num_classes=10), vision((3, 64, 64)),
                 {"ckpt", "inplace"}),
    "mobilenet_v3_small": (tv("mobilenet_v3_small", num_classes=10),
                           vision((3, 64, 64)), {"inplace"}),
    "efficientnet_b0": (tv("efficientnet_b0", num_classes=10),
                        vision((3, 64, 64)), {"inplace"}),
    "vit": (vit, vision((3, 32, 32)), {"amp"}),
    "convnext_tiny": (tv("convnext_tiny", num_classes=10),
                      vision((3, 64, 64)), {"inplace"}),
    "swin_t": (swin, vision((3, 64, 64)), set()),
    # its forward: F.relu(self.features(x), inplace=True)
    "densenet121": (tv("densenet121", num_classes=10), vision((3, 64, 64)),
                    {"inplace"}),
    "deeplabv3": (deeplab, segmentation, {"inplace"}),
    "wav2vec2": (wav2vec2, audio, set()),
    "conformer": (conformer, features, set()),
    "wavernn": (wavernn, wavernn_in, set()),
}


def forward(name, model, x, y, opts):
    """The model's loss, as its training script computes it."""
    if name == "wav2vec2":
        logits, _ = model(x)
        return logits.mean(1).log_softmax(-1).gather(1, y[:, None]).neg() \
            .mean()
    if name == "conformer":
        return nn.functional.mse_loss(model(x), y)
    if name == "wavernn":
        out = model(x, y)  # the waveform and its spectrogram
        return out.square().mean()
    out = model(x)
    if isinstance(out, dict):  # torchvision's segmentation models
        out = out["out"]
    return nn.functional.cross_entropy(out, y)


def checkpointed(model, x):
    """A ResNet's forward with each of its four stages recomputed in
    backward (torch.utils.checkpoint, as memory-bound scripts do), put in
    place of the model's forward: called through model(x), as a subclass
    overriding forward would be."""
    ck = torch.utils.checkpoint.checkpoint
    x = model.maxpool(model.relu(model.bn1(model.conv1(x))))
    for layer in (model.layer1, model.layer2, model.layer3, model.layer4):
        x = ck(layer, x, use_reentrant=False)
    return model.fc(torch.flatten(model.avgpool(x), 1))


def conformer_layers(model, x):
    """Conformer's forward without its padding mask, put in place of it:
    Conformer.forward makes the mask from torch.max(lengths).item() on
    the device, garbage on the stand-in (no kernel runs); the sequences
    here are full anyway. Its layers one after the other, as it calls
    them, through model(x): the modules named from the model, as the
    in-process hooks name them, not each layer a root of its own."""
    out = x.transpose(0, 1)
    for layer in model.conformer_layers:
        out = layer(out, None)
    return out.transpose(0, 1)


def stats(dev):
    s = torch.cuda.memory_stats(dev)
    return {k: s.get(v, 0) for k, v in (
        ("allocated", "allocated_bytes.all.current"),
        ("reserved", "reserved_bytes.all.current"),
        ("allocated_peak", "allocated_bytes.all.peak"),
        ("reserved_peak", "reserved_bytes.all.peak"),
        ("allocs", "allocation.all.allocated"),
        ("alloc_bytes", "allocated_bytes.all.allocated"),
        ("frees", "allocation.all.freed"),
        ("free_bytes", "allocated_bytes.all.freed"))}


def weights(model):
    """(bytes, module) of the weights, largest first: the check finds a
    gradient by its address, so weights of one size (Conformer's two
    identical layers) are told apart as well."""
    out = []
    for name, mod in model.named_modules():
        # not getattr: a parametrized weight (wav2vec2's weight_norm) is
        # computed by calling its parametrization, a module the hooks log
        w = mod._parameters.get("weight")
        if isinstance(w, nn.Parameter) and name:
            n = w.numel() * w.element_size()
            if n % 512 == 0:
                out.append((n, name))
    return sorted(out, reverse=True)


def modlog_class():
    """cuda_model.py's ModLog, its peaks those of the whole run: the
    reset at MID is for the attach there, which --module-log (attached
    at READY) does not see."""
    from cuda_model import ModLog

    class WholeRun(ModLog):
        floor = (0, 0)

        def figures(self):
            now = super().figures()
            return now[:2] + (max(self.floor[0], now[2]),
                              max(self.floor[1], now[3]))
    return WholeRun


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", choices=sorted(MODELS))
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--history")
    ap.add_argument("--modlog")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        print("\n".join(MODELS))
        return 0
    if not args.model:
        ap.error("a MODEL or --list")
    if os.environ.get("MT_CORPUS_NO_CUDNN") == "1":
        torch.backends.cudnn.enabled = False
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if not torch.cuda.is_available():
        sys.exit("corpus.py: no CUDA device")
    torch.cuda.init()
    build, make_batch, opts = MODELS[args.model]
    model = build()
    model.train()
    if "ckpt" in opts:
        model.forward = checkpointed.__get__(model)
    if args.model == "conformer":
        model.forward = conformer_layers.__get__(model)
    if args.modlog:
        # PyTorch's full backward hooks refuse a module whose output is
        # modified in place (ReLU(inplace=True) and the like)
        for mod in model.modules():
            if getattr(mod, "inplace", False) is True:
                mod.inplace = False
    batches = [make_batch(args.batch) for _ in range(args.steps)]
    dev = torch.device("cuda", 0)

    from cuda_model import history_save, history_start, report

    mt_sync.start()
    if args.history:
        history_start()
    model.to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    modlog = None
    if args.modlog and "inplace" in opts:
        how = ("F.relu(self.features(x), inplace=True)"
               if args.model == "densenet121" else "out += identity")
        mt_sync.emit(f"nohooks {args.model}: its forward modifies a "
                     f"module's output in place ({how}), which PyTorch's "
                     "full backward hooks refuse")
    elif args.modlog:
        modlog = modlog_class()(args.modlog, model, dev)
    called = []
    hooks = [mod.register_forward_pre_hook(
        lambda m, _, n=name: called.append(n or type(m).__name__))
        for name, mod in model.named_modules()]
    peaks = None
    for step, (x, y) in enumerate(batches):
        if step == 1:
            mid = stats(dev)
            mt_sync.emit("mid dev=cuda:0 " + " ".join(
                f"{k}={v}" for k, v in mid.items()))
            if "MT_GO2" in os.environ:
                mt_sync.emit(f"MID {os.getpid()}")
                mt_sync.wait("MT_GO2")
            peaks = (mid["allocated_peak"], mid["reserved_peak"])
            if modlog:
                modlog.floor = peaks
            torch.cuda.reset_peak_memory_stats(dev)
        x = x.to(dev, non_blocking=True)
        y = y.to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16,
                            enabled="amp" in opts):
            loss = forward(args.model, model, x, y, opts)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if modlog:
            modlog.record("optimizer", "pre_step")
        opt.step()
        if modlog:
            modlog.record("optimizer", "post_step")
        if step == 0:
            for h in hooks:
                h.remove()
    torch.cuda.synchronize()
    if args.history:
        history_save(args.history)
    if modlog:
        modlog.out.close()
    since = stats(dev)
    if peaks:
        # the whole run's peaks: before MID's reset and after it
        real = torch.cuda.memory_stats

        def whole(d=None):
            s = dict(real(d))
            s["allocated_bytes.all.peak"] = max(
                peaks[0], s["allocated_bytes.all.peak"])
            s["reserved_bytes.all.peak"] = max(
                peaks[1], s["reserved_bytes.all.peak"])
            return s
        torch.cuda.memory_stats = whole
    report([0])
    mt_sync.emit(f"since dev=cuda:0 allocated_peak={since['allocated_peak']}"
                 f" reserved_peak={since['reserved_peak']}")
    for n, name in weights(model):
        # the gradient is named with the module that ran: swin_t's
        # attention calls F.linear with attn.qkv's weight, never attn.qkv
        if name not in called:
            continue
        grad = model.get_submodule(name).weight.grad
        ptr = grad.data_ptr() if grad is not None else 0
        mt_sync.emit(f"grad {name} {n} {ptr:#x}")
    mt_sync.emit("modules " + " ".join(dict.fromkeys(called)))
    mt_sync.emit(f"done {args.model}")
    mt_sync.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
