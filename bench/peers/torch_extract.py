#!/usr/bin/env python3
"""Time PyTorch's EfficientNet-Lite2 feature extraction on image folders (images/s), the peer
of `glshift extract`: same preprocessing (torchvision Resize(297, bicubic), CenterCrop(260),
ToTensor, Normalize(127/255, 128/255)), same network (PyPI efficientnet-lite-pytorch 0.1.0),
same feature (global average pool of the head conv after BN + ReLU6), CPU, float32, eval mode.

Needs: pip install torch torchvision pillow numpy efficientnet-lite-pytorch

    python bench/peers/torch_extract.py --images ../shared/data/office_caltech10_images \
        --weights ../shared/models/efficientnet-lite2-9656183e.pth --domains dslr webcam \
        [--threads 2] [--batch 16] [--out DIR]

Prints images/s for decoding + preprocessing + inference (weights loading excluded), the
quantity `glshift extract` prints. With --out, writes <domain>_features.npy for comparison.
"""

import argparse
import os
import time

import numpy as np
import torch
import torchvision.transforms as T
from efficientnet_lite_pytorch import EfficientNet
from PIL import Image


def files_of(domain_dir):
    """(path, label) in row order: class folders sorted, then file names sorted."""
    classes = sorted(
        d for d in os.listdir(domain_dir) if os.path.isdir(os.path.join(domain_dir, d))
    )
    rows = []
    for label, c in enumerate(classes):
        for f in sorted(os.listdir(os.path.join(domain_dir, c))):
            rows.append((os.path.join(domain_dir, c, f), label))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--out")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = EfficientNet.from_name("efficientnet-lite2")
    model.load_state_dict(torch.load(a.weights, map_location="cpu", weights_only=False))
    model.eval()
    tf = T.Compose(
        [
            T.Resize(297, interpolation=T.InterpolationMode.BICUBIC),
            T.CenterCrop(260),
            T.ToTensor(),
            T.Normalize([127 / 255] * 3, [128 / 255] * 3),
        ]
    )
    total, start = 0, time.perf_counter()
    for d in a.domains:
        rows = files_of(os.path.join(a.images, d))
        feats = []
        with torch.no_grad():
            for i in range(0, len(rows), a.batch):
                x = torch.stack(
                    [tf(Image.open(p).convert("RGB")) for p, _ in rows[i : i + a.batch]]
                )
                feats.append(model.extract_features(x).mean((2, 3)).numpy())
        total += len(rows)
        if a.out:
            os.makedirs(a.out, exist_ok=True)
            np.save(
                os.path.join(a.out, f"{d}_features.npy"), np.concatenate(feats).astype(np.float32)
            )
    secs = time.perf_counter() - start
    print(
        f"torch {torch.__version__}: extracted {total} images in {secs:.1f} s: "
        f"{total / secs:.2f} images/s on {a.threads} threads (batch {a.batch})"
    )


if __name__ == "__main__":
    main()
