# A calibrated profile's shape (hpt_calibrate writes one like it).
name = cpu-2core
source = hpt_calibrate on this host
fp32_flops = 9.1e10
tf32_flops = 0
bf16_flops = 4.2e10
memory_bw = 1.2e10
compute_share = 0.8
memory_share = 0.7
gemm_rates = 4096:1.5e9,262144:2.1e10,16777216:6.8e100
memory_rates = 65536:8e9,16777216:1.1e10
memory_rates_streamed = 65536:9e9
memory_rates_inplace = # A calmory# A calib_rat