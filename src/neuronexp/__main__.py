from neuronexp.cli import main

main()
