"""The host side: crcr_host.py, the one file a lab host needs (`crcr-host up`), served by the relay at
/plugins/crcr/crcr-host and run here as `crcr host`. It imports nothing of crcr's: hosts never install the relay."""
