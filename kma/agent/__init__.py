"""The agent side: enrolling with a KMA (`enroll`) and simulating tape drives (`simulator`).

What `kma agent ...` runs. It talks to a KMA's service listener only, as a tape drive would.
"""
