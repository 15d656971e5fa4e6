#!/usr/bin/env python3
"""Is a PNG screenshot more than a blank page?  (standard library only: zlib + struct)

  png_check.py FILE [--min-fraction F] [--min-colours N]   exit 0 when it is, 1 when blank or unreadable
  png_check.py --make-blank FILE W H                       write an all-white PNG (the check's own test)

Counts pixels that are not near-white (any channel below 235) and distinct colours. A rendered
report has text, tables and coloured chart bars: several percent of its pixels and dozens of colours.
"""
import struct
import sys
import zlib


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def make_blank(path, w, h):
    raw = b"".join(b"\x00" + b"\xff" * (3 * w) for _ in range(h))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if ihdr is None:
        raise ValueError("no IHDR chunk")
    w, h, depth, ctype, _, _, interlace = ihdr
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError(f"unsupported PNG: bit depth {depth}, colour type {ctype}, interlace {interlace}")
    raw = zlib.decompress(idat)
    stride = w * channels
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        ftype = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 0xFF
            elif ftype == 2:
                line[x] = (line[x] + b) & 0xFF
            elif ftype == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 0xFF
            elif ftype == 4:
                line[x] = (line[x] + paeth(a, b, c)) & 0xFF
            elif ftype != 0:
                raise ValueError(f"bad filter type {ftype}")
        rows.append(line)
        prev = line
    return w, h, channels, rows


def main(argv):
    if len(argv) >= 2 and argv[1] == "--make-blank":
        make_blank(argv[2], int(argv[3]), int(argv[4]))
        return 0
    path = argv[1]
    min_fraction = float(argv[argv.index("--min-fraction") + 1]) if "--min-fraction" in argv else 0.02
    min_colours = int(argv[argv.index("--min-colours") + 1]) if "--min-colours" in argv else 16
    try:
        w, h, ch, rows = decode(path)
    except (OSError, ValueError, zlib.error) as e:
        print(f"png_check: {path}: {e}")
        return 1
    colour_channels = min(ch, 3) if ch >= 3 else 1
    inked, colours = 0, set()
    for line in rows:
        for x in range(0, len(line), ch):
            px = bytes(line[x:x + colour_channels])
            colours.add(px)
            if min(px) < 235:
                inked += 1
    frac = inked / float(w * h)
    print(f"png_check: {path}: {w}x{h}, {inked} non-white pixels ({100 * frac:.2f} %), {len(colours)} colours")
    if frac < min_fraction or len(colours) < min_colours:
        print(f"png_check: {path}: looks blank (need >= {100 * min_fraction:.1f} % non-white and >= {min_colours} colours)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
