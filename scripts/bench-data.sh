#!/usr/bin/env bash
# Gathers real bytes for the byte-codec benchmarks (`tessera-bench lll`, `tessera-bench huffman`,
# `bench/peers/nvcomp_bytes.py`) into bench/data/ (or $1):
#   - 8-bit grayscale images: the PNGs scikit-image ships in its wheel (camera, astronaut, coins,
#     page, text, moon, coffee, ...), decoded by a small pure-Python PNG reader below (no numpy
#     or Pillow needed; colour converted with ITU-R BT.601 luma) and written raw as
#     <name>-<width>x<height>.gray;
#   - random-512x512.gray and black-512x512.gray, the paper's Random and Black images, at the
#     size of `camera`;
#   - text.txt: the licences and copyright files of the installed packages, concatenated;
#   - xml.xml: XML files of the installed system (iso-codes, shared MIME info, xkb rules, ...).
# Total is kept under ~40 MB (the folder travels to the GPU machine with the binaries).
# Needs python3, pip (only to download the scikit-image wheel; nothing is installed) and unzip
# or python's zipfile. Re-running replaces the files.
set -euo pipefail

out="${1:-bench/data}"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "downloading the scikit-image wheel (data files only are used)"
if ! python3 -m pip download scikit-image --no-deps -q -d "$tmp/wheel"; then
    echo "pip download failed: no images from scikit-image" >&2
fi

python3 - "$out" "$tmp/wheel" <<'PY'
import glob, io, os, random, struct, sys, zipfile, zlib

out, wheel_dir = sys.argv[1], sys.argv[2]
MAX_TEXT = 8 << 20
MAX_XML = 8 << 20
MAX_IMAGE_BYTES = 4 << 20  # per image; bigger ones are skipped
# The images kept: the classic test images, natural photographs, textures, a scanned page.
KEEP = {"camera", "astronaut", "coins", "page", "text", "moon", "coffee", "chelsea", "grass",
        "motorcycle_left", "logo", "cell"}


def png_gray(data):
    """8-bit grayscale pixels of a non-interlaced PNG (bit depth 8 or 16), and its size."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, plte = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            plte = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if interlace or depth not in (8, 16):
        raise ValueError(f"unsupported PNG (depth {depth}, interlace {interlace})")
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    bpp = channels * depth // 8
    stride = w * bpp
    raw = zlib.decompress(b"".join(idat))
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 255
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        rows.append(bytes(line))
        prev = line
    px = bytearray(w * h)
    step = depth // 8  # 16-bit samples: the high byte
    k = 0
    for line in rows:
        for x in range(w):
            s = line[x * bpp:(x + 1) * bpp:step]
            if ctype == 3:
                r, g, b = plte[3 * s[0]:3 * s[0] + 3]
            elif channels >= 3:
                r, g, b = s[0], s[1], s[2]
            else:
                r = g = b = s[0]
            px[k] = (299 * r + 587 * g + 114 * b + 500) // 1000
            k += 1
    return bytes(px), w, h


camera_size = None
for whl in sorted(glob.glob(os.path.join(wheel_dir, "*.whl"))):
    with zipfile.ZipFile(whl) as z:
        for name in sorted(z.namelist()):
            if not (name.startswith("skimage/data/") and name.endswith(".png")):
                continue
            base = os.path.basename(name)[:-4]
            if base not in KEEP:
                continue
            try:
                px, w, h = png_gray(z.read(name))
            except Exception as e:  # a PNG flavour the small reader does not take
                print(f"  skip {base}: {e}")
                continue
            if w * h < 64 * 64 or w * h > MAX_IMAGE_BYTES:
                print(f"  skip {base}: {w}x{h}")
                continue
            path = os.path.join(out, f"{base}-{w}x{h}.gray")
            open(path, "wb").write(px)
            print(f"  {path}: {len(px)} bytes")
            if base == "camera":
                camera_size = (w, h)

w, h = camera_size or (512, 512)
rng = random.Random(20161120)
open(os.path.join(out, f"random-{w}x{h}.gray"), "wb").write(bytes(rng.getrandbits(8) for _ in range(w * h)))
open(os.path.join(out, f"black-{w}x{h}.gray"), "wb").write(bytes(w * h))
print(f"  random-{w}x{h}.gray, black-{w}x{h}.gray")


def gather(patterns, limit):
    buf, seen = bytearray(), set()
    for pat in patterns:
        for p in sorted(glob.glob(pat, recursive=True)):
            real = os.path.realpath(p)
            if real in seen or not os.path.isfile(real):
                continue
            seen.add(real)
            try:
                b = open(real, "rb").read()
            except OSError:
                continue
            if b[:2] == b"\x1f\x8b":
                continue
            buf += b
            if len(buf) >= limit:
                return bytes(buf[:limit])
    return bytes(buf)


text = gather(["/usr/share/common-licenses/*", "/usr/share/doc/*/copyright", "/usr/share/doc/**/*.txt",
               "/usr/share/doc/**/README*"], MAX_TEXT)
open(os.path.join(out, "text.txt"), "wb").write(text)
print(f"  text.txt: {len(text)} bytes")
xml = gather(["/usr/share/xml/**/*.xml", "/usr/share/mime/packages/*.xml", "/usr/share/X11/xkb/rules/*.xml",
              "/usr/share/**/*.xml"], MAX_XML)
if xml:
    open(os.path.join(out, "xml.xml"), "wb").write(xml)
print(f"  xml.xml: {len(xml)} bytes")
PY

du -sh "$out"
total=$(du -sb "$out" | cut -f1)
if [ "$total" -gt $((40 * 1024 * 1024)) ]; then
    echo "warning: $out holds $total bytes, more than 40 MB" >&2
fi
if ! git check-ignore -q "$out" 2>/dev/null; then
    echo "note: $out is not ignored by git (add it to .gitignore so it is never committed)" >&2
fi
