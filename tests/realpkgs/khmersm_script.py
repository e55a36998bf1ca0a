"""Run khmersm (Khmer word segmentation: a transformer ONNX model with EXTERNAL DATA,
then CRF Viterbi in numpy)."""
import khmersm
from khmersm.inference import Segmenter

texts = [
    "ខ្ញុំចូលចិត្តរៀនភាសាខ្មែរ",                      # I like learning the Khmer language
    "ប្រទេសកម្ពុជាមានរាជធានីភ្នំពេញ",                 # Cambodia has the capital Phnom Penh
    "សួស្តី! Hello 123 សូមអរគុណច្រើន។",                # mixed script passthrough
    "",
]
seg = Segmenter()
print("khmersm model:", seg.onnx_path.name, "inputs:",
      [(i.name, i.type, i.shape) for i in seg.sess.get_inputs()])
for t in texts:
    print(repr(t), "->", repr(seg.segment(t)))
print("module-level segment():", repr(khmersm.inference.segment("ភាសាខ្មែរ")))
