"""sweep.py - every model of torchvision 0.21 and the models of torchaudio
2.6, trained one step on "cuda" under the CUDA stand-in.

Run it in the CUDA root with the stand-ins in place of the GPU libraries:

    scripts/cuda-standin.sh --bind /tmp -- python3 /tmp/sweep.py [NAME...]

(copy it to /tmp first, or bind its folder). For each model, built with
weights=None on the CPU (without torch.nn.init's fills: see no_init) and
moved to "cuda", it runs forward, backward and one SGD
step on a small input and prints one line:

    ok   NAME max_allocated=BYTES max_reserved=BYTES base=BYTES SECONDS
    FAIL NAME ExceptionType: message (first line)
    known NAME ExceptionType: message -- why it cannot run here (KNOWN)

and a last line with the counts. The models run one after another in one
process, so a peak includes what earlier ones left allocated, base= (the
cuBLAS workspaces PyTorch keeps per handle and stream, 32 MiB each on
compute capability 9.0); the peaks of one model alone are those of a run
that names it alone. NAMEs on the command line run only
those models; a NAME ending in "*" is a prefix ("resnet*" runs every
ResNet, "audio/*" every torchaudio model). Exit status 0 when every model ran or failed as KNOWN says,
1 otherwise.

Values are garbage (no kernel runs); what is real is every allocation
PyTorch's caching allocator makes, which is what the stand-in is for.
The sweep is not part of `make test`; tests/e2e/cuda.bats runs a short
subset of it.
"""
import contextlib
import gc
import sys
import time
import traceback

import torch
import torchvision
from torchvision import models as tvm

try:
    import torchaudio
    from torchaudio import models as tam
except ImportError:  # torchaudio is optional
    torchaudio = None

DEV = "cuda"


def rand(*shape):
    return torch.randn(*shape, device=DEV)


def image(n=2, size=64):
    return rand(n, 3, size, size)


def detection_targets(n, size, masks=False, keypoints=False):
    targets = []
    for _ in range(n):
        boxes = torch.tensor([[4.0, 4.0, size / 2, size / 2],
                              [8.0, 10.0, size - 4.0, size - 6.0]],
                             device=DEV)
        t = {"boxes": boxes,
             "labels": torch.tensor([1, 2], device=DEV)}
        if masks:
            t["masks"] = torch.zeros(2, size, size, dtype=torch.uint8,
                                     device=DEV)
        if keypoints:
            t["keypoints"] = torch.ones(2, 17, 3, device=DEV)
        targets.append(t)
    return targets


# Inputs per family. Each entry: (model kwargs, function returning the
# call's args and kwargs). Sizes are the smallest the models accept.
FIXED_224 = ("vit_", "maxvit_t", "swin_", "swin_v2")


def vision_case(name):
    """kwargs for the builder, and a function of no argument that returns
    (args, kwargs) for the forward call"""
    if name.startswith("quantized_"):
        kw = {"quantize": False}
        if "inception" in name or "googlenet" in name:
            kw["init_weights"] = False
        size = 299 if "inception" in name else 64
        return kw, lambda: ((image(2, size),), {})
    if name in ("inception_v3",):
        return {"init_weights": False}, lambda: ((image(2, 299),), {})
    if name == "googlenet":
        return {"init_weights": False}, lambda: ((image(2, 64),), {})
    if name.startswith(FIXED_224):
        return {}, lambda: ((image(1, 224),), {})
    if name in ("r3d_18", "mc3_18", "r2plus1d_18"):
        return {}, lambda: ((rand(2, 3, 4, 32, 32),), {})
    if name == "s3d":
        return {}, lambda: ((rand(1, 3, 16, 224, 224),), {})
    if name.startswith("mvit_"):
        return {}, lambda: ((rand(1, 3, 16, 224, 224),), {})
    if name.startswith("swin3d_"):
        return {}, lambda: ((rand(1, 3, 4, 64, 64),), {})
    if name.startswith("raft_"):
        return {}, lambda: ((image(1, 128), image(1, 128)),
                            {"num_flow_updates": 2})
    if name in ("fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2",
                "fasterrcnn_mobilenet_v3_large_fpn",
                "fasterrcnn_mobilenet_v3_large_320_fpn", "maskrcnn_resnet50_fpn",
                "maskrcnn_resnet50_fpn_v2", "keypointrcnn_resnet50_fpn",
                "retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2",
                "fcos_resnet50_fpn"):
        size = 128
        kw = {"weights_backbone": None, "min_size": size, "max_size": size}
        masks = name.startswith("maskrcnn")
        keypoints = name.startswith("keypointrcnn")
        return kw, lambda: (([rand(3, size, size), rand(3, size, size)],
                             detection_targets(2, size, masks, keypoints)),
                            {})
    if name == "ssd300_vgg16":
        return ({"weights_backbone": None},
                lambda: (([rand(3, 300, 300)] * 2,
                          detection_targets(2, 300)), {}))
    if name == "ssdlite320_mobilenet_v3_large":
        return ({"weights_backbone": None},
                lambda: (([rand(3, 320, 320)] * 2,
                          detection_targets(2, 320)), {}))
    if name.startswith(("fcn_", "deeplabv3_", "lraspp_")):
        return {"weights_backbone": None}, lambda: ((image(2, 64),), {})
    return {}, lambda: ((image(2, 64),), {})


def audio_cases():
    """name -> (builder of no argument, function returning (args, kwargs))"""
    if torchaudio is None:
        return {}
    wav = lambda n=2, t=16000: rand(n, t)  # noqa: E731
    c = {}
    for n in ("wav2vec2_base", "hubert_base", "wavlm_base"):
        c[n] = (getattr(tam, n), lambda: ((wav(),), {}))
    c["hubert_pretrain_base"] = (
        tam.hubert_pretrain_base,
        lambda: ((wav(), torch.randint(0, 100, (2, 49), device=DEV)), {}))
    c["conformer"] = (
        lambda: tam.Conformer(input_dim=80, num_heads=4, ffn_dim=128,
                              num_layers=2, depthwise_conv_kernel_size=31),
        lambda: ((rand(2, 50, 80),
                  torch.tensor([50, 40], device=DEV)), {}))
    c["wav2letter"] = (lambda: tam.Wav2Letter(num_classes=40),
                       lambda: ((rand(2, 1, 16000),), {}))
    c["deepspeech"] = (lambda: tam.DeepSpeech(n_feature=80, n_class=40),
                       lambda: ((rand(2, 1, 50, 80),), {}))
    c["conv_tasnet_base"] = (tam.conv_tasnet_base,
                             lambda: ((rand(2, 1, 8000),), {}))
    c["hdemucs_low"] = (lambda: tam.hdemucs_low(sources=["a", "b"]),
                        lambda: ((rand(1, 2, 44100),), {}))
    c["emformer_rnnt_base"] = (
        lambda: tam.emformer_rnnt_base(num_symbols=64),
        lambda: ((rand(2, 40, 80), torch.tensor([40, 40], device=DEV),
                  torch.randint(0, 64, (2, 6), device=DEV),
                  torch.tensor([6, 6], device=DEV)), {}))
    c["emformer"] = (
        lambda: tam.Emformer(input_dim=80, num_heads=4, ffn_dim=128,
                             num_layers=2, segment_length=4,
                             right_context_length=1),
        lambda: ((rand(2, 41, 80), torch.tensor([41, 41], device=DEV)), {}))
    c["tacotron2"] = (
        lambda: tam.Tacotron2(n_symbol=40),
        lambda: ((torch.randint(0, 40, (2, 20), device=DEV),
                  torch.tensor([20, 18], device=DEV), rand(2, 80, 30),
                  torch.tensor([30, 30], device=DEV)), {}))
    c["wavernn"] = (
        # waveform: (frames - kernel_size + 1) x hop_length = 9 x 200
        lambda: tam.WaveRNN(upsample_scales=[5, 5, 8], n_classes=256,
                            hop_length=200),
        lambda: ((rand(2, 1, 1800), rand(2, 1, 128, 13)), {}))
    c["squim_objective_base"] = (tam.squim_objective_base,
                                 lambda: ((rand(2, 16000),), {}))
    c["squim_subjective_base"] = (tam.squim_subjective_base,
                                  lambda: ((rand(2, 16000), rand(2, 16000)),
                                           {}))
    return c


# What cannot run on the stand-in, and why; such a model prints "known"
# and does not fail the sweep. Each was seen to fail for that reason.
VALUES = ("sizes a tensor by values that kernels compute (no kernel runs "
          "on the stand-in, so they are garbage)")
DETECTION = (VALUES + "; on a GPU, Debian's torchvision would fail too: "
             "its nms/roi_align have no CUDA kernels (_C links no CUDA)")
KNOWN = {
    "fasterrcnn_": DETECTION, "maskrcnn_": DETECTION,
    "keypointrcnn_": DETECTION, "retinanet_": DETECTION,
    "fcos_": DETECTION, "ssd300_": DETECTION, "ssdlite320_": DETECTION,
    "audio/conformer": VALUES + " (the padding mask: lengths.max())",
    "audio/emformer": VALUES + " (the padding mask: lengths.max())",
    "audio/tacotron2": VALUES + " (the padding mask: lengths.max())",
    "audio/hdemucs_low": ("cuFFT is not stood in: NVIDIA's libcufft.so.11 "
                          "in the root fails on the stand-in driver"),
}


def known(name):
    for prefix, why in KNOWN.items():
        if name.startswith(prefix):
            return why
    return None


def tensors(out):
    """every floating tensor in a model's output, however it is nested"""
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() and out.requires_grad else []
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in tensors(o)]
    if hasattr(out, "_asdict"):
        return tensors(list(out._asdict().values()))
    return []


@contextlib.contextmanager
def no_init():
    """torch.nn.init's fills as no-ops while a model is built: its values
    do not matter here (no kernel reads them on the stand-in), and the
    fills of the largest models cost the CPU tens of seconds. The model is
    built on the CPU, not on "cuda": some compute their structure with
    tensors (RegNet's widths), which on the stand-in would be garbage."""
    saved = {}
    for name in dir(torch.nn.init):
        fn = getattr(torch.nn.init, name)
        if name.endswith("_") and not name.startswith("_") and callable(fn):
            saved[name] = fn
            setattr(torch.nn.init, name, lambda t, *a, **k: t)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch.nn.init, name, fn)


def step(build, inputs):
    """forward, backward and an SGD step; the peaks of that"""
    with no_init():
        model = build()
    model.to(DEV).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    args, kwargs = inputs()
    parts = tensors(model(*args, **kwargs))
    if not parts:
        raise RuntimeError("the output has nothing to differentiate")
    loss = sum(p.float().sum() for p in parts)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()


def cases():
    for name in tvm.list_models():
        kw, inputs = vision_case(name)
        yield name, (lambda n=name, k=kw: tvm.get_model(n, weights=None,
                                                        **k)), inputs
    for name, (build, inputs) in audio_cases().items():
        yield "audio/" + name, build, inputs


def main(argv):
    want = argv[1:]
    ok = failed = skipped = 0
    for name, build, inputs in cases():
        if want and not any(name == w or (w.endswith("*") and
                                          name.startswith(w[:-1]))
                            for w in want):
            continue
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        # what earlier models left allocated (cuBLAS's workspaces, kept
        # per handle and stream): part of this model's peaks
        base = torch.cuda.memory_allocated()
        t0 = time.monotonic()
        try:
            alloc, res = step(build, inputs)
        except Exception as e:  # noqa: BLE001 - the sweep reports each
            first = (str(e).strip().splitlines() or [""])[0][:200]
            why = known(name)
            if why:
                print(f"known {name} {type(e).__name__}: {first} -- {why}",
                      flush=True)
                skipped += 1
            else:
                print(f"FAIL {name} {type(e).__name__}: {first}", flush=True)
                failed += 1
            if "-v" in sys.argv:
                traceback.print_exc()
        else:
            print(f"ok   {name} max_allocated={alloc} max_reserved={res} "
                  f"base={base} {time.monotonic() - t0:.1f}s", flush=True)
            ok += 1
        gc.collect()
    print(f"sweep: {ok} ok, {skipped} known, {failed} failed (torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}, torchaudio "
          f"{torchaudio.__version__ if torchaudio else 'absent'})",
          flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main([a for a in sys.argv if a != "-v"]))
