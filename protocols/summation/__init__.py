"""Private summation in the shuffle model: Split-Mix (IKOS split and mix) and its workload."""
