from stapel_rl.train.app import main

main()
