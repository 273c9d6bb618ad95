"""Benchmark prompt sets shipped with spectui; SOURCE.txt says where each comes from and under which licence."""
