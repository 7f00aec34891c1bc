"""gradlab: learn how gradients really work, by reproducing classic TensorFlow-1 gradient tutorials in PyTorch."""

__version__ = "0.1.0"
