"""The service layer: one module per area, each a set of functions over an `Appliance`.

Services check roles only through the API's dependencies; they check state and input here, and
every write goes through `Appliance.commit` so it is atomic and audited.
"""
