Feature: An order is paid copy by delivered copy
  The user's coins are set aside when an order is confirmed. Each copy the user
  receives is paid once; whatever is not delivered goes back to the user.

  Background:
    Given the price list:
      | copies | coins per copy |
      | 1      | 5              |
      | 5      | 4              |
      | 10     | 3              |
    And the user holds 50 coins

  Scenario: Cancelling after two delivered copies pays for those two only
    When the user orders 5 copies
    Then each copy costs 4 coins and 20 coins are set aside for the order
    And the user's coins are:
      | available | set aside | spent | expired |
      | 30        | 20        | 0     | 0       |
    When worker "A" takes the job
    And worker "A" renders copies 1 and 2
    And the user receives copies 1 and 2
    And the user cancels the order
    And worker "A" checks in
    Then worker "A" is told to stop
    When worker "A" stops
    Then the order is cancelled
    And the user is told the order is cancelled: 8 coins charged and 12 returned
    And the user's coins are:
      | available | set aside | spent | expired |
      | 42        | 0         | 8     | 0       |

  Scenario: A delivery reported twice is charged once
    Given the user has ordered 5 copies
    And worker "A" has taken the job
    And worker "A" has rendered copy 1
    When the user receives copy 1
    And the user receives copy 1 again
    Then the first delivery costs 4 coins and the second costs nothing
    And the user's coins are:
      | available | set aside | spent | expired |
      | 30        | 16        | 4     | 0       |

  Scenario: A copy rendered but not yet received when the user cancels is free
    Given the user has ordered 5 copies
    And worker "A" has taken the job
    And worker "A" has rendered copies 1 and 2
    When the user receives copy 1
    And the user cancels the order
    And the user receives copy 2
    Then the second delivery costs nothing
    When worker "A" stops
    Then the user is told the order is cancelled: 4 coins charged and 16 returned
    And the user's coins are:
      | available | set aside | spent | expired |
      | 46        | 0         | 4     | 0       |

  Scenario: Cancelling an order no worker has started returns everything at once
    Given the user has ordered 5 copies
    When the user cancels the order
    Then the order is cancelled
    And the user is told the order is cancelled: 0 coins charged and 20 returned
    And the user's coins are:
      | available | set aside | spent | expired |
      | 50        | 0         | 0     | 0       |

  Scenario: A finished order has every delivered copy paid
    Given the user has ordered 5 copies
    And worker "A" has taken the job
    And worker "A" has rendered copies 1, 2, 3, 4 and 5
    When worker "A" reports the job finished with receipt "done-1"
    And the user receives copies 1, 2, 3, 4 and 5
    Then the order is done
    And the user's coins are:
      | available | set aside | spent | expired |
      | 30        | 0         | 20    | 0       |

  Scenario Outline: A cancel is settled when the silent worker's lease runs out
    Given the user has ordered 5 copies
    And worker "A" has taken the job
    And worker "A" has rendered copy 1
    And the user has received copy 1
    When the user cancels the order
    And worker "A" goes silent until its lease runs out
    And <someone notices>
    Then the order is cancelled
    And the user is told the order is cancelled: 4 coins charged and 16 returned
    And the user's coins are:
      | available | set aside | spent | expired |
      | 46        | 0         | 4     | 0       |

    Examples:
      | someone notices              |
      | the stalled-job sweep runs   |
      | worker "B" takes the job     |

  Scenario: Copies rendered before an order failed are still delivered and paid
    Given the user has ordered 5 copies
    And worker "A" has taken the job
    And worker "A" has rendered copies 1 and 2
    And the user has received copy 1
    When worker "A" reports giving up on the job for good with receipt "gave-up-1"
    Then the order has failed
    And the user is told the order failed: 4 coins charged and 12 returned
    And the user's coins are:
      | available | set aside | spent | expired |
      | 42        | 4         | 4     | 0       |
    When the user receives copy 2
    Then the user's coins are:
      | available | set aside | spent | expired |
      | 42        | 0         | 8     | 0       |
