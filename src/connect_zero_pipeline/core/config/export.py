"""The ONNX export's opsets."""

DEFAULT_OPSET = 18
MIN_OPSET = 18  # the dynamo exporter's lowest native opset (17 would need a lossy conversion)
