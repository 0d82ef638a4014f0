"""Heavy-hitter detection over huge domains: HHD of Luo, Wang, Yi (CCS 2022),
:mod:`protocols.heavy_hitters.hhd`, and its ``sdp run hhd`` workload."""
