from neuronexp.cli.main import main

main()
