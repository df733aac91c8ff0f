Feature: A coin keeps its expiry date, whatever happens to the order
  Coins that were set aside and not spent go back to the lot they came from.
  A cancel never extends a coin's life: coins whose lot expired while the order
  ran come back as expired; coins whose lot is still valid come back available,
  with the lot's original expiry date.

  Background:
    Given the price list:
      | copies | coins per copy |
      | 1      | 5              |
      | 5      | 4              |
      | 10     | 3              |
    And the user holds a lot "welcome" of 10 coins expiring in 1 hour
    And the user holds a lot "savings" of 50 coins expiring in 30 days
    And the user has ordered 5 copies

  Scenario Outline: Coins set aside come back to their own lot after a cancel
    When <time> pass
    And the user cancels the order
    Then lot "welcome" has <welcome available> coins available and <welcome expired> expired
    And lot "savings" has 50 coins available
    And lot "welcome" still expires 1 hour after it was granted
    And lot "savings" still expires 30 days after it was granted
    And the user's coins are:
      | available   | set aside | spent | expired   |
      | <available> | 0         | 0     | <expired> |

    Examples: cancelled while the welcome coins are still valid
      | time       | welcome available | welcome expired | available | expired |
      | 30 minutes | 10                | 0               | 60        | 0       |

    Examples: cancelled after the welcome coins expired
      | time    | welcome available | welcome expired | available | expired |
      | 2 hours | 0                 | 10              | 50        | 10      |

  Scenario: The expiry sweep takes only coins that are not set aside
    When 2 hours pass
    And the expiry sweep runs
    Then the user's coins are:
      | available | set aside | spent | expired |
      | 40        | 20        | 0     | 0       |

  Scenario: Coins set aside are still spent after their lot expired
    When 2 hours pass
    And worker "A" takes the job
    And worker "A" renders copies 1, 2, 3, 4 and 5
    And the user receives copies 1, 2, 3, 4 and 5
    Then lot "welcome" has 10 coins spent
    And lot "savings" has 10 coins spent
    And the user's coins are:
      | available | set aside | spent | expired |
      | 40        | 0         | 20    | 0       |

  Scenario: A lot that expires while a worker renders the order gets its unspent coins back as expired
    Given worker "A" has taken the job
    And worker "A" has rendered copy 1
    And the user has received copy 1
    When 2 hours pass while worker "A" keeps checking in
    And the user cancels the order
    And worker "A" stops
    Then the order is cancelled
    And lot "welcome" has 0 coins available and 6 expired
    And lot "savings" has 50 coins available
    And lot "savings" still expires 30 days after it was granted
    And the user's coins are:
      | available | set aside | spent | expired |
      | 50        | 0         | 4     | 6       |
