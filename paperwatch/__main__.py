from paperwatch.cli import main

main()
