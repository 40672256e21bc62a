"""crcr: a Buildbot master configuration relaying upstream PyTorch to out-of-tree backends' CI."""
