"""The ONNX export's opsets, and the names of the graph's input and outputs (which the
registry's signature names too)."""

INPUT_NAME = "board"
OUTPUT_NAMES = ("logits", "value")

DEFAULT_OPSET = 18
MIN_OPSET = 18  # the dynamo exporter's lowest native opset (17 would need a lossy conversion)
