"""The master key's generations, their rotation in the background, and HSM tokens through it."""
