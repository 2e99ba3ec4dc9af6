"""mm-trace's machinery: tracefs, raw ring-buffer capture and decoding, stall analysis, the irqsoff tracer."""
