"""Style-shifted copies of image domains, for `glshift extract` (docs/strong-shift.md).

usage: python scripts/style_shift_images.py IMAGES OUT DOMAIN:STYLE [DOMAIN:STYLE ...]

Reads IMAGES/<domain>/<class>/*.{jpg,png} and writes OUT/<domain>-<style>/<class>/<stem>.png,
one rendering per image, deterministic (no randomness): the same input gives the same bytes.
Styles:

- `gray`: luminance only (ITU-R 601-2), kept as three equal channels.
- `edges`: a sketch: luminance, a 3x3 edge filter, inverted and stretched to the full range
  (dark strokes on white), as pencil drawings render an object.
- `poster`: two bits per channel (64 colours) after a mild blur, as flat cartoon colouring.

Needs Pillow (`pip install pillow`). Images are written outside the repository.
"""

import sys
from pathlib import Path

from PIL import Image, ImageFilter, ImageOps

STYLES = ("gray", "edges", "poster")
SUFFIXES = {".jpg", ".jpeg", ".png"}


def render(img: Image.Image, style: str) -> Image.Image:
    rgb = img.convert("RGB")
    if style == "gray":
        return ImageOps.grayscale(rgb).convert("RGB")
    if style == "edges":
        edges = ImageOps.grayscale(rgb).filter(ImageFilter.FIND_EDGES)
        return ImageOps.autocontrast(ImageOps.invert(edges), cutoff=1).convert("RGB")
    if style == "poster":
        return ImageOps.posterize(rgb.filter(ImageFilter.SMOOTH_MORE), 2)
    raise ValueError(f"unknown style {style!r} (styles: {', '.join(STYLES)})")


def style_domain(images: Path, out: Path, domain: str, style: str) -> int:
    src = images / domain
    if not src.is_dir():
        raise SystemExit(f"{src}: no such domain folder")
    dst_root = out / f"{domain}-{style}"
    count = 0
    for class_dir in sorted(p for p in src.iterdir() if p.is_dir()):
        dst = dst_root / class_dir.name
        dst.mkdir(parents=True, exist_ok=True)
        for f in sorted(class_dir.iterdir()):
            if f.suffix.lower() not in SUFFIXES:
                continue
            with Image.open(f) as img:
                render(img, style).save(dst / f"{f.stem}.png")
            count += 1
    return count


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        raise SystemExit(__doc__)
    images, out = Path(argv[0]), Path(argv[1])
    for spec in argv[2:]:
        domain, _, style = spec.partition(":")
        if style not in STYLES:
            raise SystemExit(f"{spec}: expected DOMAIN:STYLE with STYLE one of {', '.join(STYLES)}")
        n = style_domain(images, out, domain, style)
        print(f"{domain}-{style}: {n} images")


if __name__ == "__main__":
    main(sys.argv[1:])
