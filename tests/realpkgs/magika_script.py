"""Run magika (Google's file-type detector) on deterministic in-memory samples."""
import hashlib
import io
import json

import magika
import numpy as np
from magika import Magika
from PIL import Image

PY = b'''import os
import sys


def main(argv):
    """Print every argument with its index."""
    for i, arg in enumerate(argv):
        print(f"{i}: {arg}")
    return 0


class Greeter:
    def __init__(self, name):
        self.name = name

    def greet(self):
        return "Hello, " + self.name


if __name__ == "__main__":
    sys.exit(main(sys.argv))
''' * 3
JS = b'''function add(a, b) {
  return a + b;
}
const items = [1, 2, 3].map((x) => x * 2);
document.addEventListener("DOMContentLoaded", () => {
  console.log("ready", items, add(2, 3));
});
export default add;
''' * 4
HTML = b'''<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Test page</title>
<link rel="stylesheet" href="style.css"></head>
<body>
<h1>Hello</h1>
<p>This is a <a href="https://example.com">link</a> inside a paragraph.</p>
<ul><li>one</li><li>two</li><li>three</li></ul>
<script src="app.js"></script>
</body>
</html>
''' * 3
JSONB = json.dumps({"users": [{"id": i, "name": f"user{i}", "active": i % 2 == 0,
                               "tags": ["a", "b", "c"][: i % 3 + 1], "score": i * 1.5}
                              for i in range(20)]}, indent=2).encode()
CSV = ("id,name,city,amount\n"
       + "".join(f"{i},name{i},city{i % 7},{i * 3.25:.2f}\n" for i in range(60))).encode()
C = b'''#include <stdio.h>
#include <stdlib.h>

static int square(int x) { return x * x; }

int main(int argc, char **argv) {
    int total = 0;
    for (int i = 0; i < argc; i++) {
        total += square(i);
        printf("%d %s\\n", i, argv[i]);
    }
    return total > 100 ? EXIT_FAILURE : EXIT_SUCCESS;
}
''' * 3
# A deterministic PNG made with PIL.
_pixels = (np.arange(64 * 64 * 3, dtype=np.uint32) * 7 % 251).astype(np.uint8)
_buf = io.BytesIO()
Image.fromarray(_pixels.reshape(64, 64, 3)).save(_buf, format="PNG")
PNG = _buf.getvalue()
RANDOM = bytes((i * 1103515245 + 12345) % 256 for i in range(4096))
SHORT = b"hi"

samples = [("python", PY), ("javascript", JS), ("html", HTML), ("json", JSONB), ("csv", CSV),
           ("c", C), ("png", PNG), ("lcg-bytes", RANDOM), ("short", SHORT)]

m = Magika()
print("magika", magika.__version__, m.get_model_name())
for name, data in samples:
    r = m.identify_bytes(data)
    digest = hashlib.sha256(data).hexdigest()[:12]
    print(f"{name:11s} len={len(data):5d} sha={digest} dl={r.dl.label!s:12s} "
          f"output={r.output.label!s:12s} score={r.score!r}")
