"""The one list page every area uses: its declaration, its table model, a row's details."""
