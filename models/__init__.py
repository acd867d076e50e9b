"""Validated, frozen input and output schemas of fleetplan (pydantic v2).

Data flows one way: ``inputs/`` files → these models → ``solver`` → outputs.
"""
