#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check a mesh heat map as a renderer drew it.

  svg_check.py SVG PNG [ROW>COL=#rrggbb ...]

SVG is what `lockstepctl mesh --svg` wrote, PNG what a real renderer
(rsvg-convert) made of it. Every cell of the SVG (a <g class="cell"> with a
<title> "ROW to COL: VALUE" and a <rect>) must show its declared fill in the
PNG, sampled inside the rect away from its text and border; and each
ROW>COL=#rrggbb given must be that cell's colour (the scale's ends, DOWN,
no data, no answer). Exit 0 when all hold, 1 with the reasons otherwise.
"""
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

NS = "{http://www.w3.org/2000/svg}"


def png_pixels(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s is not a PNG" % path)
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("unsupported PNG (depth %d, colour type %d)" % (depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def rgb(hexcol):
    return tuple(int(hexcol[i:i + 2], 16) for i in (1, 3, 5))


def main():
    svg, png, want = sys.argv[1], sys.argv[2], sys.argv[3:]
    root = ET.parse(svg).getroot()
    sw, sh = float(root.get("width")), float(root.get("height"))
    w, h, px = png_pixels(png)
    if (w, h) != (round(sw), round(sh)):
        print("PNG is %dx%d, the SVG says %sx%s" % (w, h, sw, sh))
        return 1
    cells, bad = {}, []
    for g in root.iter(NS + "g"):
        if g.get("class") != "cell":
            continue
        title, r = g.find(NS + "title").text, g.find(NS + "rect")
        who = title.split(": ")[0]
        row, col = who.split(" to ")
        x, y = float(r.get("x")), float(r.get("y"))
        got = px[int(y + 5)][int(x + 5)]
        fill = rgb(r.get("fill"))
        cells[row + ">" + col] = fill
        if max(abs(a - b) for a, b in zip(got, fill)) > 3:
            bad.append("%s: drawn %s, declared %s" % (title, got, r.get("fill")))
    if not cells:
        bad.append("no cells in %s" % svg)
    for w_ in want:
        key, col = w_.split("=")
        if key not in cells:
            bad.append("no cell %s (have %s)" % (key, sorted(cells)))
        elif cells[key] != rgb(col):
            bad.append("cell %s is %s, want %s" % (key, cells[key], col))
    for b in bad:
        print(b)
    print("svg_check: %d cells, %d expectations: %s" %
          (len(cells), len(want), "ok" if not bad else "%d problems" % len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
