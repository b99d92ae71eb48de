"""GPU and host benchmarks of tilec (scripts; see README.md here)."""
