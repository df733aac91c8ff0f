Feature: Setting coins aside for an order
  An order sets aside its whole price when it is confirmed, taking the coins that
  expire soonest first, so the user loses as few coins to expiry as possible.

  Background:
    Given the price list:
      | copies | coins per copy |
      | 1      | 5              |
      | 5      | 4              |
      | 10     | 3              |

  Scenario Outline: Not enough coins refuses the order and says how many are missing
    Given the user holds <held> coins
    When the user orders <copies> copies
    Then the order is refused because <missing> coins are missing
    And no coins are set aside

    Examples:
      | held | copies | missing |
      | 15   | 5      | 5       |
      | 0    | 1      | 5       |
      | 29   | 10     | 1       |

  Scenario: Coins past their expiry cannot pay for an order
    Given the user holds a lot "welcome" of 20 coins expiring in 1 hour
    When 2 hours pass
    And the user orders 1 copy
    Then the order is refused because 5 coins are missing
    And no coins are set aside

  Scenario: The coins that expire soonest are used first
    Given the user holds a lot "welcome" of 10 coins expiring in 3 days
    And the user holds a lot "referral" of 10 coins expiring in 1 day
    And the user holds a lot "purchase" of 100 coins that never expire
    When the user orders 5 copies
    Then the order sets aside:
      | lot      | coins |
      | referral | 10    |
      | welcome  | 10    |
      | purchase | 0     |

  Scenario: Spending uses the soonest-expiring coins set aside
    Given the user holds a lot "welcome" of 30 coins expiring in 3 days
    And the user holds a lot "referral" of 2 coins expiring in 1 day
    And the user has ordered 5 copies
    And worker "A" has taken the job
    And worker "A" has rendered copy 1
    When the user receives copy 1
    Then lot "referral" has 2 coins spent
    And lot "welcome" has 2 coins spent

  Scenario: An order refused for lack of coins can be confirmed once the user has enough
    Given the user holds 15 coins
    And the user was quoted 5 copies
    When the user confirms the quote
    Then the order is refused because 5 coins are missing
    When the user is granted 5 more coins
    And the user confirms the quote
    Then 20 coins are set aside for the order
