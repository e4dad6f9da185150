#!/usr/bin/env bash
# bench/train/gpu_bench.sh: tune-train --device cuda against PyTorch on one GPU, same model,
# optimiser, batch, data and FP32 math: samples/s and achieved TFLOP/s of each, their
# ratios from this one run, and what an NCCL all-reduce adds per step (PyTorch DDP with
# world size 1 against plain PyTorch; with --gpus 2 also both at world size 2).
# Not a test (ctest does not run it) and not portable to machines without a GPU.
#
# Needs: an NVIDIA GPU, nvcc 13 (CUDA 13 toolkit), python3 with PyTorch (2.11 was the target)
# and the Fashion-MNIST IDX files (--data). cuDNN and NCCL may come from the system or
# from the nvidia-cudnn-cu* / nvidia-nccl-cu* wheels PyTorch installs. In the wheel case,
# CMake finds them through two environment variables read by the top-level CMakeLists,
# each a ';'-separated list of folders (this script sets them itself when it builds):
#   cudnn=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])')
#   nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
#   export TUNE_CUDA_EXTRA_INCLUDES="$cudnn/include;$nccl/include"
#   export TUNE_CUDA_EXTRA_LIBS="$cudnn/lib;$nccl/lib"
#   cmake -S . -B build-cuda-bench -DTUNE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
#   cmake --build build-cuda-bench --target tune-train -j
# (the wheels ship libcudnn.so.9 and libnccl.so.2, which is what CMake looks for; at run
# time the same lib folders go on LD_LIBRARY_PATH). If /usr/local/cuda also holds a cuDNN
# or NCCL, CMake prefers that one; pass -DCUDNN_INCLUDE_DIR=... -DCUDNN_LIBRARY=... (and the
# NCCL_* pair) to choose explicitly, so headers and library come from the same release.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

build="$root/build-cuda-bench"
model=cnn
batch=256
epochs=3
limit=0
data=/usr/share/datasets/fashion-mnist
gpus=1
py=${PYTHON:-python3}
keep=0
tf32=0

usage() {
    cat <<EOF
usage: bench/train/gpu_bench.sh [--build DIR] [--model cnn|mlp] [--batch-size N]
                                [--epochs N] [--train-limit N] [--data DIR] [--gpus 1|2]
                                [--python PY] [--tf32] [--keep]
  --build DIR       build folder; configured and built here if DIR/bin/tune-train is
                    missing (default: build-cuda-bench in the repository)
  --model M         cnn (default) or mlp (784-256-256-10)
  --batch-size N    global batch (default $batch)
  --epochs N        epochs per run (default $epochs); the first is warm-up, the rest
                    are timed (median epoch)
  --train-limit N   first N training images (default 0: all 60000)
  --data DIR        Fashion-MNIST IDX files (default $data)
  --gpus 2          also compare at world size 2 (tune-train --ranks 2, DDP with 2 ranks)
  --python PY       the python with torch (default \$PYTHON or python3)
  --tf32            allow TF32 on both sides (tune-train --tf32, torch allow_tf32)
  --keep            keep the work folder (result lines, logs, the PyTorch script)
By default TF32 is off on both sides (tune-train's default; torch's allow_tf32 False).
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --batch-size) batch=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --train-limit) limit=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --tf32) tf32=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "gpu_bench.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
case "$model" in cnn | mlp) ;; *) echo "gpu_bench.sh: --model must be cnn or mlp" >&2; exit 2 ;; esac
case "$gpus" in 1 | 2) ;; *) echo "gpu_bench.sh: --gpus must be 1 or 2" >&2; exit 2 ;; esac
for v in batch epochs limit; do
    if ! [[ ${!v} =~ ^[0-9]+$ ]]; then
        echo "gpu_bench.sh: --${v} wants a whole number, not '${!v}'" >&2
        exit 2
    fi
done
if [ "$epochs" -lt 2 ]; then
    echo "gpu_bench.sh: --epochs must be at least 2 (the first is warm-up)" >&2
    exit 2
fi
if [ "$gpus" = 2 ] && [ $((batch % 2)) -ne 0 ]; then
    echo "gpu_bench.sh: --batch-size must be even with --gpus 2" >&2
    exit 2
fi
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "gpu_bench.sh: $py cannot import torch or sees no CUDA device" >&2
    exit 1
fi
ngpu=$("$py" -c 'import torch; print(torch.cuda.device_count())')
if [ "$ngpu" -lt "$gpus" ]; then
    echo "gpu_bench.sh: --gpus $gpus but only $ngpu visible" >&2
    exit 1
fi

# cuDNN / NCCL from PyTorch's wheels, when present: for the build and at run time.
wheel_dir() { "$py" -c "import $1 as m; print(list(m.__path__)[0])" 2>/dev/null || true; }
cudnn_w=$(wheel_dir nvidia.cudnn)
nccl_w=$(wheel_dir nvidia.nccl)
extra_inc="" extra_lib=""
for d in "$cudnn_w" "$nccl_w"; do
    if [ -n "$d" ] && [ -d "$d/include" ]; then
        extra_inc="${extra_inc:+$extra_inc;}$d/include"
        extra_lib="${extra_lib:+$extra_lib;}$d/lib"
        export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
done

tt="$build/bin/tune-train"
if [ ! -x "$tt" ]; then
    echo "gpu_bench.sh: building tune-train in $build" >&2
    TUNE_CUDA_EXTRA_INCLUDES="$extra_inc" TUNE_CUDA_EXTRA_LIBS="$extra_lib" \
        cmake -S "$root" -B "$build" -DTUNE_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-native}" >"$build.configure.log" 2>&1 || {
        echo "gpu_bench.sh: cmake failed; see $build.configure.log" >&2
        exit 1
    }
    cmake --build "$build" --target tune-train -j"$(nproc)" >"$build.build.log" 2>&1 || {
        echo "gpu_bench.sh: build failed; see $build.build.log" >&2
        exit 1
    }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tune-gpu-bench.XXXXXX")
cleanup() { if [ "$keep" = 1 ]; then echo "gpu_bench.sh: kept $work" >&2; else rm -rf "$work"; fi; }
trap cleanup EXIT

# ---- tune-train ---------------------------------------------------------------------------
run_tune() { # ranks -> result lines in $work/tune_<ranks>.jsonl
    local ranks=$1 devs=0 extra=()
    [ "$ranks" = 2 ] && devs=0,1
    [ "$tf32" = 1 ] && extra=(--tf32)
    env -u TUNE_TRIAL_DIR CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-$devs}" \
        "$tt" --device cuda --ranks "$ranks" "${extra[@]}" --model "$model" --batch-size "$batch" \
        --epochs "$epochs" --optimizer sgd --lr 0.05 --momentum 0.9 --seed 1 \
        --train-limit "$limit" --val-limit 1000 --data "$data" --cache-dir "$work/cache" \
        >"$work/tune_$ranks.jsonl" 2>"$work/tune_$ranks.log" || {
        echo "gpu_bench.sh: tune-train --ranks $ranks failed:" >&2
        tail -5 "$work/tune_$ranks.log" >&2
        exit 1
    }
}

# ---- PyTorch: the same nets as train/model.c -----------------------------------------
cat >"$work/torch_bench.py" <<'PYEOF'
# PyTorch side of gpu_bench.sh: trains the tune-train model with SGD on GPU-resident
# Fashion-MNIST, plain or under DDP (NCCL), and prints one JSON line per epoch.
import argparse, gzip, json, os, socket, struct, sys, time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

MEAN, STD = 0.2860, 0.3530  # train/train.c


def load_idx(path):
    for p in (path + ".gz", path):
        if os.path.exists(p):
            with open(p, "rb") as f:
                raw = f.read()
            break
    else:
        sys.exit(f"torch_bench: {path}(.gz) not found")
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    nd = raw[3]
    dims = struct.unpack(">" + "I" * nd, raw[4 : 4 + 4 * nd])
    return torch.frombuffer(bytearray(raw[4 + 4 * nd :]), dtype=torch.uint8).reshape(dims)


def make_model(kind):
    if kind == "cnn":  # conv5x5x32-relu-pool2, conv5x5x64-relu-pool2, fc128-relu, fc10
        return nn.Sequential(
            nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(1024, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                         nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def train_flops_per_sample(kind):
    """Multiply-adds of the forward pass x 2 FLOPs; backward = 2x forward, minus the
    input gradient of the first layer (neither side computes it)."""
    if kind == "cnn":
        macs = [24 * 24 * 32 * 25, 8 * 8 * 64 * 32 * 25, 1024 * 128, 128 * 10]
    else:
        macs = [784 * 256, 256 * 256, 256 * 10]
    return 2.0 * (3 * sum(macs) - macs[0])


def worker(rank, world, a, port, out):
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    ddp = a.mode == "ddp"
    if ddp:
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world, device_id=dev)
    x = load_idx(os.path.join(a.data, "train-images-idx3-ubyte"))
    y = load_idx(os.path.join(a.data, "train-labels-idx1-ubyte")).long()
    n = a.limit if 0 < a.limit < x.shape[0] else x.shape[0]
    x, y = x[:n].to(dev), y[:n].to(dev)
    torch.manual_seed(1)
    model = make_model(a.model).to(dev)
    if ddp:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    lb = a.batch // world
    shard = (n + world - 1) // world
    g = torch.Generator(device="cpu")
    lines = []
    for epoch in range(1, a.epochs + 1):
        g.manual_seed(1000 + epoch)
        perm = torch.randperm(n, generator=g)
        perm = torch.cat([perm, perm[: shard * world - n]])[rank::world].to(dev)
        loss_sum = torch.zeros((), device=dev)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        steps = 0
        for lo in range(0, shard, lb):
            idx = perm[lo : lo + lb]
            xb = (x[idx].unsqueeze(1).float() / 255.0 - MEAN) / STD
            loss = F.cross_entropy(model(xb), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach()
            steps += 1
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        lines.append({"epoch": epoch, "samples_per_s": shard * world / dt, "steps": steps,
                      "time_s": dt, "train_loss": loss_sum.item() / steps})
    if ddp:
        dist.destroy_process_group()
    if rank == 0:
        out.put(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["plain", "ddp"], required=True)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--data", required=True)
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--flops", action="store_true", help="print FLOPs per sample and exit")
    a = ap.parse_args()
    if a.flops:
        print(train_flops_per_sample(a.model))
        return
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    if a.mode == "plain":
        worker(0, 1, a, port, q)
    else:
        mp.spawn(worker, args=(a.world, a, port, q), nprocs=a.world, join=True)
    for line in q.get():
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
PYEOF

run_torch() { # mode world -> $work/torch_<mode>_<world>.jsonl
    local extra=()
    [ "$tf32" = 1 ] && extra=(--tf32)
    "$py" "$work/torch_bench.py" --mode "$1" --world "$2" --model "$model" --batch "$batch" \
        --epochs "$epochs" --limit "$limit" --data "$data" "${extra[@]}" \
        >"$work/torch_$1_$2.jsonl" 2>"$work/torch_$1_$2.log" || {
        echo "gpu_bench.sh: PyTorch ($1, world $2) failed:" >&2
        tail -5 "$work/torch_$1_$2.log" >&2
        exit 1
    }
}

echo "gpu_bench: $("$py" -c 'import torch; print(torch.cuda.get_device_name(0))'), torch" \
    "$("$py" -c 'import torch; print(torch.__version__)'), model $model, global batch $batch," \
    "$epochs epochs (first is warm-up), $([ "$tf32" = 1 ] && echo "TF32 allowed" || echo "FP32 (TF32 off)")"
run_tune 1
run_torch plain 1
run_torch ddp 1
if [ "$gpus" = 2 ]; then
    run_tune 2
    run_torch ddp 2
fi
flops=$("$py" "$work/torch_bench.py" --mode plain --model "$model" --data . --flops)

# ---- report -----------------------------------------------------------------------------
"$py" - "$work" "$flops" "$batch" "$gpus" <<'PYEOF'
import json, os, statistics, sys

work, flops, batch, gpus = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])


def rate(name):
    """Median samples/s over the timed epochs (the first epoch is warm-up)."""
    rows = [json.loads(l) for l in open(os.path.join(work, name)) if l.startswith("{")]
    rows = [r for r in rows if r.get("epoch", 0) >= 2 and r.get("samples_per_s", 0) > 0]
    if not rows:
        sys.exit(f"gpu_bench: no timed epochs in {name}")
    return statistics.median(r["samples_per_s"] for r in rows)


runs = [("tune-train --device cuda, 1 rank", "tune_1.jsonl"),
        ("torch, no DDP", "torch_plain_1.jsonl"),
        ("torch DDP (NCCL), world 1", "torch_ddp_1.jsonl")]
if gpus == 2:
    runs += [("tune-train --device cuda, 2 ranks", "tune_2.jsonl"),
             ("torch DDP (NCCL), world 2", "torch_ddp_2.jsonl")]
r = {f: rate(f) for _, f in runs}
print(f"{'':36s} {'samples/s':>12s} {'TFLOP/s':>9s} {'ms/step':>9s}")
for label, f in runs:
    print(f"{label:36s} {r[f]:12.1f} {r[f] * flops / 1e12:9.3f} {1e3 * batch / r[f]:9.3f}")
print(f"(training FLOPs per sample: {flops / 1e6:.2f} M; TFLOP/s = samples/s x that)")
t, p, d = r["tune_1.jsonl"], r["torch_plain_1.jsonl"], r["torch_ddp_1.jsonl"]
print(f"ratio tune-train / torch (1 GPU, no all-reduce on either side): {t / p:.2f}x")
print(f"ratio tune-train / torch DDP world 1:                          {t / d:.2f}x")
added = 1e3 * batch / d - 1e3 * batch / p
print(f"an NCCL all-reduce adds {added:+.3f} ms/step in torch at world 1 "
      f"({100 * (p / d - 1):+.1f}% of the step); tune-train with 1 rank skips it")
if gpus == 2:
    t2, d2 = r["tune_2.jsonl"], r["torch_ddp_2.jsonl"]
    print(f"ratio tune-train / torch DDP world 2:                          {t2 / d2:.2f}x")
    print(f"scaling 1 -> 2 GPUs: tune-train {t2 / t:.2f}x, torch DDP {d2 / d:.2f}x")
PYEOF
