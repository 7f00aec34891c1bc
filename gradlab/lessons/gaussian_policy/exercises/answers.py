"""Model answers to the exercises of `gradlab gaussian-policy`, as a student would write them: what the notebooks' "Your
turn" cells become when the suite runs them (scripts/notebooks.py --answers), what a teacher can hand out afterwards.
The suite checks each one with `gradlab check`, as it checks a student's file; never imported beside a submission."""



def score(a, mu, sigma):
    return (a - mu) / sigma**2, ((a - mu) ** 2 - sigma**2) / sigma**3
